"""The course's machinery: what runs the lessons, not what they teach (see README.md)."""
