"""What the audit tools report: verdicts, exit codes, JSON and text forms, progress."""
