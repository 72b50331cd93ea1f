"""The floor that reads: records from files, stdin, dicts and DataFrames, validated and reduced to counts."""
