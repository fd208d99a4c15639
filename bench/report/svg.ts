/**
 * Hand-built SVG line charts: a panel has axes (linear or log), grid lines,
 * tick labels, a title and any number of series; a chart is a grid of panels
 * with one shared legend. Pure text, no browser.
 */

export interface Axis {
  readonly label: string;
  readonly log?: boolean;
  /** Explicit ticks: [value, label]. Default: derived from the range. */
  readonly ticks?: readonly (readonly [number, string])[];
  readonly min?: number;
  readonly max?: number;
}

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
}

export interface Panel {
  readonly title: string;
  readonly x: Axis;
  readonly y: Axis;
  readonly series: readonly Series[];
  /** Horizontal reference lines (e.g. a budget). */
  readonly hlines?: readonly { readonly y: number; readonly label: string }[];
}

export const PALETTE: Record<string, string> = {
  direct: '#2ca02c',
  h2floor: '#bcbd22',
  floor: '#7f7f7f',
  router: '#d62728',
  parent: '#1f77b4',
};
const FALLBACK = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#393b79', '#ad494a', '#637939', '#7b4173', '#3182bd'];

export function colorOf(name: string, index: number): string {
  return PALETTE[name] ?? FALLBACK[index % FALLBACK.length]!;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number): string => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1).replace(/\.0$/, '') : String(Number(n.toPrecision(2))));

function finite(points: readonly (readonly [number, number])[], a: Axis, b: Axis): [number, number][] {
  return points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!a.log || x > 0) && (!b.log || y > 0)).map(([x, y]) => [x, y]);
}

function range(values: number[], axis: Axis): [number, number] {
  let lo = axis.min ?? Math.min(...values);
  let hi = axis.max ?? Math.max(...values);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return axis.log ? [1, 10] : [0, 1];
  if (axis.log) {
    lo = 10 ** Math.floor(Math.log10(lo));
    hi = 10 ** Math.ceil(Math.log10(hi));
    if (hi <= lo) hi = lo * 10;
  } else {
    if (axis.min === undefined) lo = Math.min(0, lo);
    if (hi <= lo) hi = lo + 1;
    hi *= axis.max === undefined ? 1.08 : 1;
  }
  return [lo, hi];
}

function autoTicks(lo: number, hi: number, log: boolean): [number, string][] {
  const out: [number, string][] = [];
  if (log) {
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of [1, 2, 5]) {
        const v = m * 10 ** e;
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push([v, fmt(v)]);
      }
    }
    return out;
  }
  const step0 = (hi - lo) / 5;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) ?? step0;
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push([v, fmt(v)]);
  return out;
}

/** One panel at (ox, oy) of size w x h. */
export function renderPanel(p: Panel, ox: number, oy: number, w: number, h: number, names: readonly string[]): string {
  const m = { l: 52, r: 12, t: 24, b: 38 };
  const pw = w - m.l - m.r;
  const ph = h - m.t - m.b;
  const all = p.series.map((s) => finite(s.points, p.x, p.y));
  const xs = all.flat().map(([x]) => x);
  const ys = [...all.flat().map(([, y]) => y), ...(p.hlines ?? []).map((l) => l.y)];
  const [x0, x1] = range(xs, p.x);
  const [y0, y1] = range(ys, p.y);
  const sx = (x: number): number => ox + m.l + (p.x.log ? (Math.log10(x) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0)) : (x - x0) / (x1 - x0)) * pw;
  const sy = (y: number): number => oy + m.t + ph - (p.y.log ? (Math.log10(y) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0)) : (y - y0) / (y1 - y0)) * ph;
  const out: string[] = [];
  out.push(`<text x="${ox + m.l + pw / 2}" y="${oy + 15}" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`);
  out.push(`<rect x="${ox + m.l}" y="${oy + m.t}" width="${pw}" height="${ph}" fill="#fff" stroke="#999"/>`);
  const xt = (p.x.ticks ?? autoTicks(x0, x1, !!p.x.log)).filter(([v]) => v >= x0 && v <= x1);
  const yt = (p.y.ticks ?? autoTicks(y0, y1, !!p.y.log)).filter(([v]) => v >= y0 && v <= y1);
  for (const [v, label] of xt) {
    const x = sx(v).toFixed(1);
    out.push(`<line x1="${x}" y1="${oy + m.t}" x2="${x}" y2="${oy + m.t + ph}" stroke="#eee"/>`);
    out.push(`<text x="${x}" y="${oy + m.t + ph + 13}" text-anchor="middle" font-size="10">${esc(label)}</text>`);
  }
  for (const [v, label] of yt) {
    const y = sy(v).toFixed(1);
    out.push(`<line x1="${ox + m.l}" y1="${y}" x2="${ox + m.l + pw}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${ox + m.l - 4}" y="${y}" text-anchor="end" dominant-baseline="middle" font-size="10">${esc(label)}</text>`);
  }
  out.push(`<text x="${ox + m.l + pw / 2}" y="${oy + h - 6}" text-anchor="middle" font-size="10" fill="#555">${esc(p.x.label)}</text>`);
  out.push(
    `<text transform="translate(${ox + 12},${oy + m.t + ph / 2}) rotate(-90)" text-anchor="middle" font-size="10" fill="#555">${esc(p.y.label)}</text>`,
  );
  for (const l of p.hlines ?? []) {
    const y = sy(l.y).toFixed(1);
    out.push(`<line x1="${ox + m.l}" y1="${y}" x2="${ox + m.l + pw}" y2="${y}" stroke="#000" stroke-dasharray="2,3"/>`);
    out.push(`<text x="${ox + m.l + pw - 3}" y="${Number(y) + 11}" text-anchor="end" font-size="9">${esc(l.label)}</text>`);
  }
  p.series.forEach((s, i) => {
    const pts = all[i]!;
    if (pts.length === 0) return;
    const color = colorOf(s.name, names.indexOf(s.name));
    const d = pts.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="5,3"' : ''}/>`);
    for (const [x, y] of pts) out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2" fill="${color}"/>`);
  });
  return out.join('\n');
}

/** Greedy word wrap to about `chars` characters per line. */
function wrap(text: string, chars: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + word.length + 1 > chars) {
      out.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out;
}

/** A grid of panels (`columns` per row) with a title, subtitle lines and a legend of every series name. */
export function renderChart(title: string, subtitleText: readonly string[], panels: readonly Panel[], columns: number, panelW = 300, panelH = 230): string {
  const names = [...new Set(panels.flatMap((p) => p.series.map((s) => s.name)))];
  const width = columns * panelW + 20;
  const subtitle = subtitleText.flatMap((t) => wrap(t, Math.floor((width - 20) / 6.2)));
  // Legend entries, wrapped into rows.
  const legend: { name: string; x: number; row: number }[] = [];
  let lx = 10;
  let lrow = 0;
  for (const n of names) {
    const w = 30 + n.length * 6.5;
    if (lx + w > width - 10 && lx > 10) {
      lx = 10;
      lrow++;
    }
    legend.push({ name: n, x: lx, row: lrow });
    lx += w;
  }
  const head = 30 + subtitle.length * 14 + 22 + lrow * 16;
  const rows = Math.ceil(panels.length / columns);
  const height = head + rows * panelH + 10;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fafafa"/>`,
    `<text x="10" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  subtitle.forEach((line, i) => out.push(`<text x="10" y="${40 + i * 14}" fill="#444">${esc(line)}</text>`));
  const ly0 = 30 + subtitle.length * 14 + 12;
  legend.forEach(({ name, x, row }, i) => {
    const ly = ly0 + row * 16;
    out.push(`<line x1="${x}" y1="${ly}" x2="${x + 18}" y2="${ly}" stroke="${colorOf(name, i)}" stroke-width="3"/>`);
    out.push(`<text x="${x + 22}" y="${ly + 4}">${esc(name)}</text>`);
  });
  panels.forEach((p, i) => out.push(renderPanel(p, 10 + (i % columns) * panelW, head + Math.floor(i / columns) * panelH, panelW, panelH, names)));
  out.push('</svg>');
  return out.join('\n') + '\n';
}
