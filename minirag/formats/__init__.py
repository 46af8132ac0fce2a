"""Every reader of a file or a fetched body, one module per format family; `minirag.formats.convert` picks the reader
by type and is the only one of them the rest of minirag imports."""
