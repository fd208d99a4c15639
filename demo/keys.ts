/**
 * The keys the demo reads while it runs in a terminal (stdin in raw mode):
 * k kills or revives cluster-b, e stops or starts cluster-b's EPP, s saturates
 * or relieves cluster-b, + and - change the load by 5 req/s, q or Ctrl-C quits.
 */
import type { FaultInjector } from './faults.js';
import type { LoadGenerator } from './load.js';
import type { LiveView } from './view.js';

/** The key help line of the banner (shown only when there is a terminal to read keys from). */
export const KEYS_HELP = 'k kill/revive cluster-b · e stop/start cluster-b\'s EPP · s saturate/relieve cluster-b · +/- load · q quit';

const LOAD_STEP = 5;

export interface KeyControlsOptions {
  readonly faults: FaultInjector;
  readonly load: LoadGenerator;
  readonly view: LiveView;
  readonly quit: (reason: string) => void;
}

export class KeyControls {
  private rawMode = false;

  constructor(private readonly opts: KeyControlsOptions) {}

  /** Starts reading keys, if stdin is a terminal. */
  start(): void {
    const stdin = process.stdin;
    if (!stdin.isTTY) return;
    stdin.setRawMode(true);
    this.rawMode = true;
    stdin.resume();
    stdin.on('data', (d: Buffer) => {
      for (const key of d.toString('utf8')) void this.onKey(key);
    });
  }

  /** Gives the terminal back as it was. */
  stop(): void {
    if (!this.rawMode) return;
    process.stdin.setRawMode(false);
    process.stdin.pause();
  }

  private async onKey(key: string): Promise<void> {
    const { faults, load, view, quit } = this.opts;
    switch (key) {
      case '\u0003': // Ctrl-C in raw mode
      case 'q':
        return quit(key === 'q' ? 'q' : 'Ctrl-C');
      case 'k':
        return faults.toggle({ kind: 'kill', cluster: 'cluster-b' });
      case 'e':
        return faults.toggle({ kind: 'kill-epp', cluster: 'cluster-b' });
      case 's':
        return faults.toggle({ kind: 'saturate', cluster: 'cluster-b' });
      case '+':
      case '=':
      case '-': {
        const next = key === '-' ? Math.max(0, load.rps - LOAD_STEP) : load.rps + LOAD_STEP;
        load.setRps(next);
        view.info(`load: ${next} req/s`);
        return;
      }
      default:
        return;
    }
  }
}
