"""The server's command and method names are mirrored in the extension's constants module."""

from pathlib import Path

from torchscope.lsp import constants

TS_CONSTANTS = Path(__file__).resolve().parents[2] / "extension" / "src" / "constants.ts"


def test_every_server_name_is_in_the_extension_constants() -> None:
    text = TS_CONSTANTS.read_text()
    names = {
        value
        for key, value in vars(constants).items()
        if key.startswith(("CMD_", "REQ_", "NOTIFY_")) and isinstance(value, str)
    }
    assert names, "no names found in torchscope.lsp.constants"
    missing = sorted(name for name in names if f'"{name}"' not in text)
    assert not missing, f"extension/src/constants.ts lacks {missing}"
