/**
 * What `fred up` asks of each local component (devnet, mock backend, providerd). The
 * components import only these types and the command imports the components, so
 * nothing imports back the other way.
 */
export interface UpComponent {
  name: string;
  start(ctx: UpContext): Promise<RunningComponent>;
}

export interface UpContext {
  /** State directory, ./.fred by default. */
  home: string;
  /** What earlier components published (e.g. the devnet RPC URL), by key. */
  facts: Map<string, string>;
}

export interface RunningComponent {
  /** Human lines printed once everything is up. */
  summary: string[];
  stop(): Promise<void>;
}
