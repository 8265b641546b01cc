"""``torchscope check``: a CI gate — did any configured function get slower than the base?

Reads ``[tool.torchscope.check]`` from ``pyproject.toml``::

    [tool.torchscope.check]
    base = "main"          # default: merge base of HEAD with $GITHUB_BASE_REF (or main)
    threshold = "5%"       # slower than this with confidence fails the check
    functions = [
        { target = "model.py::fn", call = "fn(torch.randn(64, 64))" },
        { target = "model.py::new_fn", allow-missing = true },
        "model.py::g",     # a plain string: the function's own # torchscope: directive
    ]

Each function is one ``torchscope diff`` job. Writes a Markdown table (also appended to
``$GITHUB_STEP_SUMMARY`` when set) and JUnit XML. Exit 0 when nothing regressed, 1 on a
regression, 2 on a configuration or measurement error (a function marked ``allow-missing``
that fails on one side is reported and skipped instead), 3 when a comparison was
``inconclusive`` (the A/B engine could not decide, often on a busy machine) and nothing
regressed — 0 then with ``--allow-inconclusive``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from torchscope.cli.common import add_common_arguments, open_service, progress_printer
from torchscope.protocol import to_builtins

if TYPE_CHECKING:  # the profiling machinery is imported where it runs (the parser stays cheap)
    from torchscope.analysis import Diff
    from torchscope.cli.common import Commands

EXIT_OK, EXIT_REGRESSED, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 3
DEFAULT_THRESHOLD = 0.05


class ConfigError(Exception):
    """``[tool.torchscope.check]`` is missing or malformed; the message says how to fix it."""


@dataclass(frozen=True)
class CheckEntry:
    target: str
    call: Optional[str] = None
    allow_missing: bool = False


@dataclass(frozen=True)
class CheckConfig:
    root: Path
    entries: tuple[CheckEntry, ...]
    base: Optional[str] = None
    threshold: float = DEFAULT_THRESHOLD
    junit: str = "torchscope-check.xml"


@dataclass
class CheckRow:
    entry: CheckEntry
    status: str  # "ok" | "regressed" | "inconclusive" | "error" | "skipped"
    message: str
    diff: Optional[Diff] = None


def _threshold(value: Any) -> float:
    if isinstance(value, str) and value.strip().endswith("%"):
        value = float(value.strip()[:-1]) / 100
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 10:
        raise ConfigError(
            f'threshold must be a fraction (0.05) or a percentage ("5%"), got {value!r}'
        )
    return float(value)


def _entry(raw: Any) -> CheckEntry:
    if isinstance(raw, str):
        return CheckEntry(raw)
    if isinstance(raw, dict) and isinstance(raw.get("target"), str):
        call = raw.get("call")
        allow = raw.get("allow-missing", raw.get("allow_missing", False))
        if (call is not None and not isinstance(call, str)) or not isinstance(allow, bool):
            raise ConfigError(f"in {raw!r}: call must be a string, allow-missing true or false")
        return CheckEntry(raw["target"], call, allow)
    raise ConfigError(
        f'each entry of functions must be "file.py::fn" or {{ target = "file.py::fn", '
        f'call = "fn(...)" }}, got {raw!r}'
    )


def load_config(pyproject: Path) -> CheckConfig:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {pyproject}: {exc}") from exc
    section = data.get("tool", {}).get("torchscope", {}).get("check")
    if not isinstance(section, dict):
        raise ConfigError(
            f"{pyproject} has no [tool.torchscope.check] table: add one with "
            'functions = ["file.py::fn"] (see the README, "torchscope check")'
        )
    functions = section.get("functions")
    if not isinstance(functions, list) or not functions:
        raise ConfigError('[tool.torchscope.check] needs functions = ["file.py::fn", …]')
    base = section.get("base")
    if base is not None and not isinstance(base, str):
        raise ConfigError(f"base must be a git revision (a string), got {base!r}")
    return CheckConfig(
        root=pyproject.parent.resolve(),
        entries=tuple(_entry(f) for f in functions),
        base=base,
        threshold=_threshold(section.get("threshold", DEFAULT_THRESHOLD)),
        junit=str(section.get("junit", "torchscope-check.xml")),
    )


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    check = commands.add_parser(
        "check",
        help="CI gate: fail when a configured function got slower than the base revision",
        description="Compare each function of [tool.torchscope.check] in pyproject.toml with "
        "the base revision. Exit 0: nothing regressed; 1: a regression; 2: a configuration "
        "or measurement error; 3: a comparison was inconclusive (0 with --allow-inconclusive).",
    )
    check.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="exit 0 when a comparison could not decide (a busy machine), instead of 3",
    )
    check.add_argument("--config", type=Path, default=Path("pyproject.toml"))
    check.add_argument("--base", help="revision to compare with (overrides the config)")
    check.add_argument("--junit", type=Path, help="JUnit XML output (overrides the config)")
    add_common_arguments(check)
    return check


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(run_check_command(args))


async def _check_one(
    args: argparse.Namespace, config: CheckConfig, entry: CheckEntry, base: str
) -> CheckRow:
    from torchscope.host.git_source import GitError
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.source.targets import TargetError, read_target

    service = open_service(args, str(config.root))
    try:
        target = read_target(entry.target, config.root)[1]
        call = entry.call or args.call
        outcome = await service.diff(target, call, base, None, progress_printer(args))
    except (TargetError, GitError, ProfileFailure) as exc:
        status = "skipped" if entry.allow_missing else "error"
        return CheckRow(entry, status, str(getattr(exc, "message", exc)))
    finally:
        await service.close()
    verdict = outcome.diff.verdict
    regressed = verdict.id == "slower" and verdict.ci_low > 1 + config.threshold
    status = "regressed" if regressed else "ok"
    if verdict.id == "inconclusive":
        status = "inconclusive"
    return CheckRow(entry, status, verdict.headline, outcome.diff)


def _row_json(row: CheckRow) -> dict[str, Any]:
    return {
        "target": row.entry.target,
        "status": row.status,
        "message": row.message,
        "diff": to_builtins(row.diff),
        "comparison": to_builtins(row.diff.comparison) if row.diff else None,
    }


def markdown(rows: list[CheckRow], base: str, threshold: float) -> str:
    from torchscope.analysis.formatting import format_duration

    icon = {"ok": "✅", "regressed": "❌", "inconclusive": "❔", "error": "⚠️", "skipped": "➖"}
    out = [
        f"### torchscope check against `{base[:12]}` (fails when slower by more than "
        f"{threshold:.0%} with 95 % confidence)",
        "",
        "| | function | before | after | ratio (95 % interval) | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        d = row.diff
        if d is None:
            out.append(
                f"| {icon[row.status]} | `{row.entry.target}` | | | | {row.status}: {row.message} |"
            )
            continue
        v = d.verdict
        out.append(
            f"| {icon[row.status]} | `{row.entry.target}` | {format_duration(d.before.median_us)} "
            f"| {format_duration(d.after.median_us)} | {v.ratio:.3f} "
            f"({v.ci_low:.3f}–{v.ci_high:.3f}) | {v.headline} |"
        )
    return "\n".join(out) + "\n"


def junit(rows: list[CheckRow]) -> bytes:
    import xml.etree.ElementTree as ET

    suite = ET.Element(
        "testsuite",
        name="torchscope check",
        tests=str(len(rows)),
        failures=str(sum(r.status == "regressed" for r in rows)),
        errors=str(sum(r.status == "error" for r in rows)),
        skipped=str(sum(r.status in ("skipped", "inconclusive") for r in rows)),
    )
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname="torchscope.check", name=row.entry.target)
        tag = {
            "regressed": "failure",
            "error": "error",
            "skipped": "skipped",
            "inconclusive": "skipped",  # could not decide: neither passed nor failed
        }.get(row.status)
        if tag:
            ET.SubElement(case, tag, message=row.message).text = row.message
        else:
            ET.SubElement(case, "system-out").text = row.message
    data: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return data


async def run_check_command(args: argparse.Namespace) -> int:
    from torchscope.host.git_source import GitError, default_base

    try:
        config = load_config(args.config.resolve())
        base = args.base or config.base or default_base(config.root)
    except (ConfigError, GitError) as exc:
        print(f"torchscope check: {exc}", file=sys.stderr)
        return EXIT_ERROR
    rows = [await _check_one(args, config, entry, base) for entry in config.entries]
    table = markdown(rows, base, config.threshold)
    if args.json:
        print(json.dumps({"check": [_row_json(r) for r in rows], "base": base}, ensure_ascii=False))
    else:
        print(table)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(table)
    junit_path = args.junit or (config.root / config.junit)
    Path(junit_path).write_bytes(junit(rows))
    if any(r.status == "error" for r in rows):
        return EXIT_ERROR
    if any(r.status == "regressed" for r in rows):
        return EXIT_REGRESSED
    undecided = any(r.status == "inconclusive" for r in rows)
    return EXIT_INCONCLUSIVE if undecided and not args.allow_inconclusive else EXIT_OK
