"""The one path of every job (submit, cancel, read, follow), its errors and its JSON shapes."""
