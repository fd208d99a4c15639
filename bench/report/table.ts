/** Markdown table and number helpers shared by the summaries. */
export const n = (v: number | undefined, d = 2): string => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));
const row = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
export const table = (head: readonly string[], rows: readonly (readonly (string | number)[])[]): string =>
  [row(head), row(head.map(() => '---')), ...rows.map(row)].join('\n');
