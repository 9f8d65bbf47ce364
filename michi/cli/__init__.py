"""The command line: parse, call a command, render its result once, turn errors into exit codes."""
