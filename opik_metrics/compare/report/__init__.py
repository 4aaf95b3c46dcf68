"""The comparison report: the folder (JSON, HTML, plots), the page, the plots, the terminal summary."""
