"""Configuration: settings (defaults < file < environment < flags), the file's schema, and
where chatmem's files live."""
