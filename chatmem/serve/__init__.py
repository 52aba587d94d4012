"""chatmem's memory as an OpenAI-compatible endpoint (`chatmem serve`): chatmem.serve.proxy."""
