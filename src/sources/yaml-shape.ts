/**
 * A linear pre-check of manifest YAML before the yaml library parses it: the
 * library's cost grows faster than linearly with nesting depth (20 KB of `[`
 * takes seconds) and it spends ~0.1 ms per document, so a file nested deeper
 * than any Kubernetes object needs, or with more documents than a manifest
 * file plausibly holds, is refused before parsing, naming the limit.
 */

/** Nesting (block indentation levels plus flow brackets) no Kubernetes manifest comes near. */
export const MAX_YAML_DEPTH = 64;
/** Documents in one manifest file. */
export const MAX_YAML_DOCUMENTS = 2000;

const OPENS_FLOW = new Set([undefined, ' ', '\t', ':', ',', '[', '{', '-', '?']);

/** Why `text` is refused, or undefined. One pass over the text. */
export function yamlShapeProblem(text: string): string | undefined {
  const stack: number[] = [];
  let flow = 0;
  let documents = 1;
  let maxDepth = 0;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (/^(?:---|\.\.\.)(?:\s|$)/.test(line.slice(0, 4))) {
      if (++documents > MAX_YAML_DOCUMENTS) return `more than ${MAX_YAML_DOCUMENTS} YAML documents in one file`;
      stack.length = 0;
      flow = 0;
      continue;
    }
    let i = 0;
    while (line[i] === ' ') i++;
    if (i === line.length || line[i] === '#') continue;
    if (flow === 0) {
      while (stack.length > 0 && stack[stack.length - 1]! >= i) stack.pop();
      stack.push(i);
      while ((line[i] === '-' || line[i] === '?') && line[i + 1] === ' ') {
        i += 2;
        while (line[i] === ' ') i++;
        stack.push(i);
      }
    }
    let quote = '';
    let prev: string | undefined = line[i - 1];
    for (let j = i; j < line.length; j++) {
      const c = line[j]!;
      if (quote !== '') {
        if (c === '\\' && quote === '"') j++;
        else if (c === quote) quote = '';
      } else if ((c === '"' || c === "'") && OPENS_FLOW.has(prev)) quote = c;
      else if (c === '#' && (prev === ' ' || prev === undefined)) break;
      else if ((c === '[' || c === '{') && (flow > 0 || OPENS_FLOW.has(prev))) flow++;
      else if ((c === ']' || c === '}') && flow > 0) flow--;
      if (c !== ' ') prev = c;
      if (stack.length + flow > maxDepth) {
        maxDepth = stack.length + flow;
        if (maxDepth > MAX_YAML_DEPTH) return `YAML nested more than ${MAX_YAML_DEPTH} levels deep`;
      }
    }
    if (stack.length > MAX_YAML_DEPTH) return `YAML nested more than ${MAX_YAML_DEPTH} levels deep`;
  }
  return undefined;
}
