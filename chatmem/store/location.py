"""Where a history lives: the parser is configuration's (settings name the location);
the store and its backends import it from here."""

from chatmem.config.location import (
    LOCAL_HOSTS,
    SCHEMES,
    HistoryLocation,
    LocationKind,
    as_location,
    is_url,
    masked,
    parse_location,
    password_of,
)

__all__ = ["LOCAL_HOSTS", "SCHEMES", "HistoryLocation", "LocationKind", "as_location", "is_url",
           "masked", "parse_location", "password_of"]
