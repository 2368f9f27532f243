"""CSV that Excel opens correctly: UTF-8 with a BOM, CRLF rows, formula-safe cells."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from reports.writers import NOTE_PREFIX, Heading, Table, safe_row

BOM = "\ufeff"
FLUSH_ROWS = 500


def iter_csv(table: Table) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    buffer.write(BOM)
    if table.column_groups:
        writer.writerow(safe_row(cell for heading, span in table.column_groups for cell in [heading] + [""] * (span - 1)))
    writer.writerow(safe_row(table.headers))
    n = 0
    for row in table.iter_rows():
        writer.writerow(safe_row([row.text] if isinstance(row, Heading) else row))
        n += 1
        if n % FLUSH_ROWS == 0:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    if table.notes:
        writer.writerow([])
        for note in table.notes:
            writer.writerow(safe_row([NOTE_PREFIX + note]))
    yield buffer.getvalue().encode("utf-8")
