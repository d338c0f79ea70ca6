"""Reports of meta-evaluation results: JSON with signatures, Markdown/terminal tables, PNG plots.

matplotlib is imported only when a plot is drawn (``pip install 'divmeter[plot]'``).
"""

from __future__ import annotations

from divmeter.report.tables import markdown_table, rich_table
from divmeter.report.writer import report_dict, write_report

__all__ = ["markdown_table", "rich_table", "report_dict", "write_report"]
