/** Polls `check` until it stops throwing or `timeoutMs` passes; then rethrows its last error. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 2000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
