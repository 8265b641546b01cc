/** One client command: its id (constants.ts `ClientCommands`) and its handler. Each command
 * module lists its rows next to its handlers; `Commands.register` registers them all. */
export interface CommandRow {
  id: string;
  run: (arg: unknown) => Promise<void>;
}
