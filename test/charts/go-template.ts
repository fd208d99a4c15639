/**
 * A small, strict Go text/template engine for the subset the chart's templates use, so
 * tests can render the chart without Helm. Go types are modelled as: int = bigint,
 * float64 (every number from values.yaml) = number, nil = null/undefined. What Helm would
 * print differently or reject (printf %d of a float, eq of int and float, an unknown
 * function) throws here too.
 */

export type Func = (...args: unknown[]) => unknown;

type Operand =
  | { t: 'lit'; v: unknown }
  | { t: 'field'; base: 'dot' | string; chain: string[] }
  | { t: 'ident'; name: string }
  | { t: 'paren'; pipe: Pipeline };
/** decl: the variables `:=` declares, or (assign) the ones `=` sets in the scope that declared them. */
interface Pipeline { decl?: string[]; assign?: boolean; cmds: Operand[][] }
type Node =
  | { t: 'text'; s: string }
  | { t: 'action'; pipe: Pipeline }
  | { t: 'if'; branches: { pipe: Pipeline; body: Node[] }[]; otherwise: Node[] }
  | { t: 'range' | 'with'; pipe: Pipeline; body: Node[]; otherwise: Node[] };

export interface Engine {
  /** Parses a file's text and registers it, and its `define`s, for render and include. */
  add(name: string, text: string): void;
  render(name: string, data: unknown): string;
}

const TOKEN = /\s*(?:("(?:[^"\\]|\\.)*")|(`[^`]*`)|(-?\d+(?:\.\d+)?)|(:=|=|\||\(|\)|,)|(\$[A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)|((?:\.[A-Za-z0-9_]+)+|\.)|([A-Za-z_][A-Za-z0-9_]*))/y;

function tokenize(src: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < src.length) {
    if (/^\s*$/.test(src.slice(TOKEN.lastIndex))) break;
    const start = TOKEN.lastIndex;
    const m = TOKEN.exec(src);
    if (!m) throw new Error(`cannot tokenize "${src.slice(start)}"`);
    out.push(m[0].trim());
  }
  return out;
}

function parsePipeline(tokens: string[], pos = { i: 0 }, inParen = false): Pipeline {
  const pipe: Pipeline = { cmds: [] };
  if (tokens[pos.i]?.startsWith('$') && (tokens[pos.i + 1] === ':=' || tokens[pos.i + 1] === ',' || tokens[pos.i + 1] === '=')) {
    const names = [tokens[pos.i++] as string];
    if (tokens[pos.i] === ',') { pos.i++; names.push(tokens[pos.i++] as string); }
    if (tokens[pos.i++] === '=') pipe.assign = true;
    pipe.decl = names;
  }
  let cmd: Operand[] = [];
  while (pos.i < tokens.length) {
    const tok = tokens[pos.i++] as string;
    if (tok === ')') { if (!inParen) throw new Error('unexpected )'); break; }
    if (tok === '|') { pipe.cmds.push(cmd); cmd = []; continue; }
    if (tok === '(') { cmd.push({ t: 'paren', pipe: parsePipeline(tokens, pos, true) }); continue; }
    cmd.push(operand(tok));
  }
  if (cmd.length === 0) throw new Error('empty command in pipeline');
  pipe.cmds.push(cmd);
  return pipe;
}

function operand(tok: string): Operand {
  if (tok.startsWith('"')) return { t: 'lit', v: JSON.parse(tok) };
  if (tok.startsWith('`')) return { t: 'lit', v: tok.slice(1, -1) };
  if (/^-?\d+$/.test(tok)) return { t: 'lit', v: BigInt(tok) };
  if (/^-?\d+\.\d+$/.test(tok)) return { t: 'lit', v: Number(tok) };
  if (tok === 'true' || tok === 'false') return { t: 'lit', v: tok === 'true' };
  if (tok === 'nil') return { t: 'lit', v: null };
  if (tok === '.') return { t: 'field', base: 'dot', chain: [] };
  if (tok.startsWith('.')) return { t: 'field', base: 'dot', chain: tok.slice(1).split('.') };
  if (tok.startsWith('$')) {
    const [name, ...chain] = tok.split('.');
    return { t: 'field', base: name as string, chain };
  }
  return { t: 'ident', name: tok };
}

/** Splits text into text and {{ actions }}, applying the {{- and -}} trim markers. */
function lex(text: string): ({ t: 'text'; s: string } | { t: 'act'; s: string })[] {
  const out: ({ t: 'text'; s: string } | { t: 'act'; s: string })[] = [];
  let i = 0;
  let trimNext = false;
  while (i < text.length) {
    const open = text.indexOf('{{', i);
    let s = text.slice(i, open < 0 ? text.length : open);
    if (trimNext) s = s.replace(/^[ \t\r\n]+/, '');
    if (open < 0) { out.push({ t: 'text', s }); break; }
    const close = text.indexOf('}}', open);
    if (close < 0) throw new Error('unclosed {{');
    let inner = text.slice(open + 2, close);
    if (/^-[ \t\r\n]/.test(inner)) { s = s.replace(/[ \t\r\n]+$/, ''); inner = inner.slice(2); }
    trimNext = /[ \t\r\n]-$/.test(inner);
    if (trimNext) inner = inner.slice(0, -2);
    out.push({ t: 'text', s });
    inner = inner.trim();
    if (!(inner.startsWith('/*') && inner.endsWith('*/'))) out.push({ t: 'act', s: inner });
    i = close + 2;
  }
  return out;
}

function parse(text: string, defines: Map<string, Node[]>): Node[] {
  const items = lex(text);
  let k = 0;
  const block = (): { body: Node[]; end: string } => {
    const body: Node[] = [];
    while (k < items.length) {
      const it = items[k++]!;
      if (it.t === 'text') { if (it.s) body.push({ t: 'text', s: it.s }); continue; }
      const [word = ''] = it.s.split(/\s+/, 1);
      const rest = it.s.slice(word.length).trim();
      if (word === 'end' || word === 'else') return { body, end: it.s };
      if (word === 'define') {
        const inner = block();
        if (inner.end !== 'end') throw new Error('else in define');
        defines.set(JSON.parse(rest) as string, inner.body);
      } else if (word === 'if') {
        const branches: { pipe: Pipeline; body: Node[] }[] = [];
        let cond = rest;
        let otherwise: Node[] = [];
        for (;;) {
          const inner = block();
          branches.push({ pipe: parsePipeline(tokenize(cond)), body: inner.body });
          if (inner.end === 'end') break;
          if (inner.end.startsWith('else if ')) { cond = inner.end.slice('else if '.length); continue; }
          if (inner.end !== 'else') throw new Error(`if: unexpected {{${inner.end}}}`);
          const tail = block();
          if (tail.end !== 'end') throw new Error('if: expected {{end}} after {{else}}');
          otherwise = tail.body;
          break;
        }
        body.push({ t: 'if', branches, otherwise });
      } else if (word === 'range' || word === 'with') {
        const pipe = parsePipeline(tokenize(rest));
        const inner = block();
        let otherwise: Node[] = [];
        if (inner.end === 'else') otherwise = block().body;
        else if (inner.end !== 'end') throw new Error(`${word}: unsupported ${inner.end}`);
        body.push({ t: word, pipe, body: inner.body, otherwise });
      } else {
        body.push({ t: 'action', pipe: parsePipeline(tokenize(it.s)) });
      }
    }
    return { body, end: '' };
  };
  const top = block();
  if (top.end !== '') throw new Error(`unexpected {{${top.end}}}`);
  return top.body;
}

export function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === 0n || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** Go's %v of a float64: shortest digits, exponent form from 1e6 or below 1e-4 (Helm's "1e+06"). */
export function goFloat(n: number): string {
  const [mant, e] = n.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (n === 0 || (exp >= -4 && exp < 6)) return String(n);
  return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

export function goPrint(v: unknown): string {
  if (v === null || v === undefined) return ''; // Helm turns "<no value>" into ""
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return goFloat(v);
  throw new Error(`printing a ${Array.isArray(v) ? 'list' : 'map'} gives Go's map[...] syntax: use toYaml/toJson`);
}

interface Scope { dot: unknown; vars: Map<string, unknown>[]; root: unknown }

export function createEngine(funcs: Record<string, Func>, onMissing?: (path: string) => void): Engine {
  const defines = new Map<string, Node[]>();
  const files = new Map<string, Node[]>();

  const lookup = (scope: Scope, name: string): unknown => {
    for (let i = scope.vars.length - 1; i >= 0; i--) if (scope.vars[i]!.has(name)) return scope.vars[i]!.get(name);
    throw new Error(`undefined variable ${name}`);
  };
  const field = (base: unknown, chain: string[], fromRoot: boolean): unknown => {
    let v = base;
    chain.forEach((key, i) => {
      if (v === null || v === undefined) throw new Error(`nil pointer evaluating .${chain.slice(0, i + 1).join('.')}`);
      if (typeof v !== 'object') throw new Error(`can't evaluate field ${key} in a ${typeof v}`);
      const obj = v as Record<string, unknown>;
      if (!(key in obj) && fromRoot && chain[0] === 'Values') onMissing?.(chain.slice(0, i + 1).join('.'));
      v = obj[key];
    });
    return v;
  };
  const evalOperand = (op: Operand, scope: Scope): unknown => {
    switch (op.t) {
      case 'lit': return op.v;
      case 'paren': return evalPipe(op.pipe, scope);
      case 'ident': {
        const f = funcs[op.name] ?? builtins[op.name];
        if (!f) throw new Error(`function "${op.name}" not defined`);
        return f();
      }
      case 'field': {
        const base = op.base === 'dot' ? scope.dot : lookup(scope, op.base);
        return field(base, op.chain, base === scope.root);
      }
    }
  };
  const evalCmd = (cmd: Operand[], scope: Scope, piped: unknown[]): unknown => {
    const [head, ...rest] = cmd as [Operand, ...Operand[]];
    const args = (): unknown[] => [...rest.map((a) => evalOperand(a, scope)), ...piped];
    if (head.t === 'ident') {
      const f = funcs[head.name] ?? builtins[head.name];
      if (!f) throw new Error(`function "${head.name}" not defined`);
      if (head.name === 'and' || head.name === 'or') return logic(head.name, rest, scope, piped);
      return f(...args());
    }
    const v = evalOperand(head, scope);
    if (typeof v === 'function') return (v as Func)(...args());
    if (rest.length > 0 || piped.length > 0) throw new Error('can only pass arguments to a function');
    return v;
  };
  const logic = (name: string, ops: Operand[], scope: Scope, piped: unknown[]): unknown => {
    const vals = [...ops.map((o) => () => evalOperand(o, scope)), ...piped.map((p) => () => p)];
    let last: unknown;
    for (const get of vals) {
      last = get();
      if (name === 'and' ? !truthy(last) : truthy(last)) return last;
    }
    return last;
  };
  const evalPipe = (pipe: Pipeline, scope: Scope): unknown => {
    let piped: unknown[] = [];
    for (const cmd of pipe.cmds) piped = [evalCmd(cmd, scope, piped)];
    return piped[0];
  };
  const declare = (scope: Scope, names: string[] | undefined, values: unknown[]): void => {
    names?.forEach((n, i) => scope.vars[scope.vars.length - 1]!.set(n, values[i]));
  };
  // Go's `$x = v` changes the variable where it was declared (an enclosing if, range or with included).
  const assign = (scope: Scope, name: string, value: unknown): void => {
    const owner = [...scope.vars].reverse().find((m) => m.has(name));
    if (!owner) throw new Error(`undefined variable: ${name}`);
    owner.set(name, value);
  };
  const exec = (nodes: Node[], scope: Scope): string => {
    let out = '';
    for (const n of nodes) {
      if (n.t === 'text') out += n.s;
      else if (n.t === 'action') {
        const v = evalPipe(n.pipe, scope);
        if (n.pipe.decl && n.pipe.assign) assign(scope, n.pipe.decl[0]!, v);
        else if (n.pipe.decl) declare(scope, n.pipe.decl, [v]);
        else out += goPrint(v);
      } else if (n.t === 'if') {
        const hit = n.branches.find((b) => truthy(evalPipe(b.pipe, scope)));
        out += exec(hit ? hit.body : n.otherwise, { ...scope, vars: [...scope.vars, new Map()] });
      } else if (n.t === 'with') {
        const v = evalPipe(n.pipe, scope);
        out += truthy(v) ? exec(n.body, { ...scope, dot: v, vars: [...scope.vars, new Map()] }) : exec(n.otherwise, scope);
      } else {
        const v = evalPipe({ cmds: n.pipe.cmds }, scope);
        const entries: [unknown, unknown][] = Array.isArray(v)
          ? v.map((x, i) => [BigInt(i), x])
          : v && typeof v === 'object' ? Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]]) : [];
        if (v !== null && v !== undefined && typeof v !== 'object') throw new Error(`range can't iterate over ${String(v)}`);
        if (entries.length === 0) out += exec(n.otherwise, scope);
        for (const [k, x] of entries) {
          const inner: Scope = { ...scope, dot: x, vars: [...scope.vars, new Map()] };
          const names = n.pipe.decl;
          declare(inner, names, names?.length === 2 ? [k, x] : [x]);
          out += exec(n.body, inner);
        }
      }
    }
    return out;
  };
  const run = (nodes: Node[], data: unknown): string => exec(nodes, { dot: data, root: data, vars: [new Map([['$', data]])] });

  const builtins: Record<string, Func> = {
    include: (name, data) => {
      const body = defines.get(name as string) ?? files.get(name as string);
      if (!body) throw new Error(`include: no template "${String(name)}"`);
      return run(body, data);
    },
  };

  return {
    add(name, text) {
      try {
        files.set(name, parse(text, defines));
      } catch (err) {
        throw new Error(`${name}: ${(err as Error).message}`);
      }
    },
    render(name, data) {
      const body = files.get(name);
      if (!body) throw new Error(`no template ${name}`);
      try {
        return run(body, data);
      } catch (err) {
        throw new Error(`${name}: ${(err as Error).message}`);
      }
    },
  };
}
