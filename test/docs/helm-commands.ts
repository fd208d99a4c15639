/**
 * The `helm` and `kubectl` commands of a guide's shell blocks, read as a shell and Helm read
 * them: continuation lines joined, quotes removed, `--set` parsed as Helm's strvals parses it
 * (dotted keys with `\.` escapes, `{a,b}` lists, true/false, integers, null), `-f` files in order.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { mergeValues, REPO, type Obj } from '../charts/render-chart.js';

/** The commands of the ```sh blocks in `text`, each as its words (quotes removed, `$VAR` from `env`). */
export function shellCommands(text: string, env: Record<string, string>): string[][] {
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((b) => b.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#')).map((l) => words(l, env)));
}

/** Shell words: '...' literal, "..." with $VAR expanded, bare words with $VAR expanded and \x escapes. */
function words(line: string, env: Record<string, string>): string[] {
  const out: string[] = [];
  let cur: string | undefined;
  const expand = (s: string): string => s.replace(/\$([A-Z_][A-Z0-9_]*)/g, (_m, v: string) => env[v] ?? `$${v}`);
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === ' ') {
      if (cur !== undefined) out.push(cur);
      cur = undefined;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      const end = line.indexOf('"', i + 1);
      cur = (cur ?? '') + expand(line.slice(i + 1, end));
      i = end;
    } else if (c === '\\') {
      cur = (cur ?? '') + line[++i]!;
    } else if (c === '$' && line[i + 1] === '(') {
      // A command substitution: kept as one word, unexpanded.
      let depth = 0;
      let j = i;
      for (; j < line.length; j++) {
        if (line[j] === '(') depth++;
        if (line[j] === ')' && --depth === 0) break;
      }
      cur = (cur ?? '') + line.slice(i, j + 1);
      i = j;
    } else if (c === '$') {
      const m = /^\$([A-Z_][A-Z0-9_]*)/.exec(line.slice(i))!;
      cur = (cur ?? '') + expand(m[0]);
      i += m[0].length - 1;
    } else if (c === '|') {
      if (cur !== undefined) out.push(cur);
      out.push('|');
      cur = undefined;
    } else {
      cur = (cur ?? '') + c;
    }
  }
  if (cur !== undefined) out.push(cur);
  return out;
}

/** Every value of a repeated flag (`-f a -f b`). */
export function flagValues(args: readonly string[], flag: string): string[] {
  return args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));
}

function scalar(v: string): unknown {
  if (v === 'true' || v === 'false') return v === 'true';
  if (v === 'null') return null;
  if (/^-?\d+$/.test(v)) return Number(v);
  if (v.startsWith('{') && v.endsWith('}')) return v.slice(1, -1).split(',').filter((x) => x !== '').map(scalar);
  return v;
}

/** Helm's `--set` argument as values: "a.b=1,c[0].d=x,e={p,q}", `\.` a literal dot in a key. */
export function setValues(arg: string): Obj {
  const out: Obj = {};
  const pairs: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < arg.length; i++) {
    if (arg[i] === '{') depth++;
    else if (arg[i] === '}') depth--;
    else if (arg[i] === ',' && depth === 0) {
      pairs.push(arg.slice(start, i));
      start = i + 1;
    }
  }
  pairs.push(arg.slice(start));
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const keys = pair.slice(0, eq).split(/(?<!\\)\./).map((k) => k.replaceAll('\\.', '.'));
    let o: Obj = out;
    keys.forEach((k, i) => {
      const idx = /^(.+)\[(\d+)\]$/.exec(k);
      if (idx) throw new Error(`--set list index ${k}: not used by the guides`);
      if (i === keys.length - 1) o[k] = scalar(pair.slice(eq + 1));
      else o = (o[k] ??= {}) as Obj;
    });
  }
  return out;
}

export interface HelmInstall {
  readonly release: { name: string; namespace: string };
  readonly chart: string;
  readonly install: boolean;
  readonly resetThenReuse: boolean;
  readonly files: string[];
  /** The -f files, then the --set values, merged in Helm's order over `previous`. */
  readonly values: Obj;
}

/** A `helm upgrade [--install]` or `helm install` command, with `previous` the release's values when it reuses them. */
export function helmInstall(args: readonly string[], previous: Obj): HelmInstall {
  const upgrade = args[1] === 'upgrade';
  const install = !upgrade || args.includes('--install');
  const positional = args.slice(2).filter((a, i, all) => !a.startsWith('-') && !['-n', '-f', '--set', '--kube-context'].includes(all[i - 1] ?? ''));
  const resetThenReuse = args.includes('--reset-then-reuse-values');
  if (args.includes('--reuse-values')) throw new Error(`${args.join(' ')}: --reuse-values drops the new chart's defaults`);
  const files = flagValues(args, '-f');
  let values = resetThenReuse ? previous : {};
  for (const f of files) values = mergeValues(values, parse(readFileSync(path.join(REPO, f), 'utf8')) as Obj);
  for (const s of flagValues(args, '--set')) values = mergeValues(values, setValues(s));
  return { release: { name: positional[0]!, namespace: flagValues(args, '-n')[0]! }, chart: positional[1]!, install, resetThenReuse, files, values };
}
