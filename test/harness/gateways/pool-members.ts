// The InferencePool's own endpoints as a gateway sees them (the pods its selector matches,
// ip:targetPort) and the round robin a gateway falls back to over them.
import type { HostChoice } from '../standin-types.js';

export interface PoolMembers {
  /** Current members, "ip:port". */
  list(): readonly string[];
  set(members: readonly string[]): void;
  has(address: string): boolean;
  /** Round robin over the members (a local reply when there are none). */
  next(): HostChoice;
  /** Addresses next() handed out, in order. */
  readonly roundRobinPicks: string[];
}

export function poolMembers(initial: readonly string[]): PoolMembers {
  let members = [...initial];
  let cursor = 0;
  const picks: string[] = [];
  return {
    list: () => members,
    set(m) {
      members = [...m];
    },
    has: (a) => members.includes(a),
    next() {
      if (members.length === 0) {
        return { status: 503, body: 'no healthy upstream', reason: 'no healthy upstream (the pool has no endpoints)', details: 'no_healthy_upstream' };
      }
      const address = members[cursor++ % members.length]!;
      picks.push(address);
      return { address };
    },
    roundRobinPicks: picks,
  };
}
