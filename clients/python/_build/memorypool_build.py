"""A PEP 517 build backend in the standard library alone, for `pip install ./clients/python`.

Why not setuptools: it needs the `wheel` package to build a wheel (before setuptools 70.1), and an
isolated build fetches setuptools from PyPI; on a machine without PyPI (or without `wheel`) the
install failed. This backend needs nothing: `requires = []`, so pip installs from the folder
offline. It packs `src/memorypool` as a pure-Python wheel, with the metadata read from
pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "memorypool"


def _project():
    """The [project] table of pyproject.toml (tomllib where there is one, else its plain `key = "value"` lines)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        raw = handle.read()
    try:
        import tomllib

        return tomllib.loads(raw.decode("utf-8"))["project"]
    except ImportError:
        project, section = {}, None
        for line in raw.decode("utf-8").splitlines():
            header = re.match(r"^\[([^\]]+)\]\s*$", line)
            if header:
                section = header.group(1)
                continue
            pair = re.match(r'^([A-Za-z_-]+)\s*=\s*"([^"]*)"\s*$', line)
            if section == "project" and pair:
                project[pair.group(1)] = pair.group(2)
        return project


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % project["name"],
        "Version: %s" % project["version"],
    ]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    licence = project.get("license")
    if isinstance(licence, dict) and licence.get("text"):
        lines.append("License: %s" % licence["text"])
    for classifier in project.get("classifiers", []) if isinstance(project.get("classifiers"), list) else []:
        lines.append("Classifier: %s" % classifier)
    readme_path = os.path.join(ROOT, "README.md")
    body = ""
    if os.path.exists(readme_path):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme_path, encoding="utf-8") as handle:
            body = handle.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    """(path in the wheel, path on disk) of every file of the package, in a stable order."""
    base = os.path.join(ROOT, "src")
    found = []
    for folder, dirs, files in os.walk(os.path.join(base, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            disk = os.path.join(folder, name)
            found.append((os.path.relpath(disk, base).replace(os.sep, "/"), disk))
    return found


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _wheel(wheel_directory, entries):
    project = _project()
    dist = "%s-%s" % (project["name"].replace("-", "_"), project["version"])
    filename = "%s-py3-none-any.whl" % dist
    info = "%s.dist-info" % dist
    contents = list(entries) + [
        ("%s/METADATA" % info, _metadata(project).encode("utf-8")),
        ("%s/WHEEL" % info, b"Wheel-Version: 1.0\nGenerator: memorypool_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = "\n".join([_record_line(name, data) for name, data in contents] + ["%s/RECORD,," % info]) + "\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents:
            archive.writestr(name, data)
        archive.writestr("%s/RECORD" % info, record)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for name, disk in _package_files():
        with open(disk, "rb") as handle:
            entries.append((name, handle.read()))
    return _wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file that puts src/ on the path."""
    return _wheel(wheel_directory, [("%s_editable.pth" % PACKAGE, (os.path.join(ROOT, "src") + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (project["name"], project["version"])
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as archive:
        for name in ["pyproject.toml", "README.md"]:
            archive.add(os.path.join(ROOT, name), arcname="%s/%s" % (base, name))
        archive.add(os.path.join(ROOT, "_build", "memorypool_build.py"), arcname="%s/_build/memorypool_build.py" % base)
        for name, disk in _package_files():
            archive.add(disk, arcname="%s/src/%s" % (base, name))
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = _metadata(project).encode("utf-8")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return filename
