/**
 * The floor proxies' upstream set: the same EPP ports the bench router's
 * topology dials, each chosen per stream in the share the router's route
 * weights give it, so every set-up holds the same upstream connections.
 */

/** `--target host:port[,host:port...]` and `--weights w[,w...]` (default: equal). */
export function upstreamFlags(argv: readonly string[]): { targets: string[]; weights: number[] } {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const target = value('--target');
  if (target === undefined) throw new Error('--target host:port[,host:port...] is required');
  const targets = target.split(',');
  const w = value('--weights');
  const weights = w === undefined ? targets.map(() => 1) : w.split(',').map(Number);
  if (weights.length !== targets.length || weights.some((x) => !Number.isInteger(x) || x < 1)) {
    throw new Error('--weights: one positive integer per --target entry');
  }
  return { targets, weights };
}

/**
 * Smooth weighted round robin: returns the index of the next upstream. Every
 * sum(weights) picks each index comes up exactly weights[i] times, spread out
 * rather than in runs, and deterministically (no randomness in a baseline).
 */
export function weightedRotation(weights: readonly number[]): () => number {
  const current = weights.map(() => 0);
  const total = weights.reduce((a, b) => a + b, 0);
  return () => {
    let best = 0;
    for (let i = 0; i < weights.length; i++) {
      current[i]! += weights[i]!;
      if (current[i]! > current[best]!) best = i;
    }
    current[best]! -= total;
    return best;
  };
}
