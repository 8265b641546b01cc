/** Where the extension runs: the one check, mirroring `torchscope.support.refusal`. */
import { WINDOWS_REFUSAL } from "./constants";

/** The message that refuses `platform`, or undefined where torchscope runs. Over Remote-SSH
 * or WSL the extension runs on the Linux side (`extensionKind: ["workspace"]`), not here. */
export function refusal(platform: string): string | undefined {
  return platform === "win32" ? WINDOWS_REFUSAL : undefined;
}
