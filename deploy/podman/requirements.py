"""Print the third-party requirements of the wheels in a directory (default dist/), one a line.

The image installs these in a layer of their own, before the wheels themselves (--no-deps): a
code change rebuilds only the small last layer, not the dependencies (hnswlib is compiled).
"""

from __future__ import annotations

import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path


def requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode())
    return [line for line in metadata.get_all("Requires-Dist") or [] if "extra ==" not in line]


def main(dist: Path) -> None:
    wheels = sorted(dist.glob("*.whl"))
    ours = {re.split(r"-", w.name, maxsplit=1)[0].replace("_", "-") for w in wheels}
    lines = {req for wheel in wheels for req in requirements(wheel)
             if re.split(r"[ <>=!~\[;(]", req, maxsplit=1)[0] not in ours}
    sys.stdout.write("".join(f"{line}\n" for line in sorted(lines)))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("dist"))
