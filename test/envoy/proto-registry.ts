/**
 * Loads the upstream Envoy API protos (shipped by @grpc/grpc-js-xds) with
 * protobufjs and hands out message and enum types by full name.
 *
 * Packages are loaded on demand: a type name like
 * `envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor` maps to the
 * directory `envoy/extensions/filters/http/ext_proc/v3/` in one of the include
 * roots, and every .proto file there is loaded. So a `typed_config` `@type`
 * resolves exactly when the snapshot has a proto defining it.
 *
 * The snapshot predates Envoy 1.34. Values newer Envoy releases accept and our
 * configs use are added to the loaded enums (NEWER_ENUM_VALUES); anything else
 * the snapshot does not know stays unknown and is reported by the validator.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);

/** An enum value that Envoy releases after the shipped snapshot accept. */
export interface NewerEnumValue {
  readonly enumName: string;
  readonly value: string;
  readonly number: number;
  /** Which Envoy releases accept it (kept as the added value's comment). */
  readonly note: string;
}

/**
 * ext_proc BodySendMode values of envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto
 * that the snapshot lacks. FULL_DUPLEX_STREAMED is what GIE EPPs require; GRPC is listed so a
 * config using it is judged by the current enum, not by the snapshot's age. Nothing else is
 * added: any other field or value the snapshot does not know is reported as unknown.
 */
export const NEWER_ENUM_VALUES: readonly NewerEnumValue[] = [
  {
    enumName: 'envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode',
    value: 'FULL_DUPLEX_STREAMED',
    number: 4,
    note: 'Envoy 1.34+',
  },
  {
    enumName: 'envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode',
    value: 'GRPC',
    number: 5,
    note: 'Envoy releases after 1.34',
  },
];

function depsDir(): string {
  const pkgJson = require.resolve('@grpc/grpc-js-xds/package.json');
  return path.join(path.dirname(pkgJson), 'deps');
}

function protobufjsDir(): string {
  return path.dirname(require.resolve('protobufjs/package.json'));
}

/** Where imports are looked up, in order (protoc -I semantics). */
export function includeRoots(): string[] {
  const deps = depsDir();
  return [
    path.join(deps, 'envoy-api'),
    path.join(deps, 'xds'),
    path.join(deps, 'googleapis'),
    path.join(deps, 'protoc-gen-validate'),
    // google/protobuf/descriptor.proto and friends.
    protobufjsDir(),
  ];
}

export class ProtoRegistry {
  readonly root = new protobuf.Root();
  private readonly roots: string[];
  private readonly triedDirs = new Set<string>();
  /** Files that failed to load, with the reason (reported when a lookup then fails). */
  readonly loadFailures = new Map<string, string>();

  constructor(roots: string[] = includeRoots()) {
    this.roots = roots;
    this.root.resolvePath = (_origin: string, target: string): string => {
      if (path.isAbsolute(target) && fs.existsSync(target)) return target;
      for (const dir of this.roots) {
        const candidate = path.join(dir, target);
        if (fs.existsSync(candidate)) return candidate;
      }
      return target;
    };
  }

  /** A message type by full name (no leading dot), loading its package if needed. */
  message(fullName: string): protobuf.Type | undefined {
    const found = this.find(fullName);
    return found instanceof protobuf.Type ? found : undefined;
  }

  enum(fullName: string): protobuf.Enum | undefined {
    const found = this.find(fullName);
    return found instanceof protobuf.Enum ? found : undefined;
  }

  private find(fullName: string): protobuf.ReflectionObject | undefined {
    const name = fullName.replace(/^\./, '');
    if (!/^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$/.test(name)) return undefined;
    let hit = this.lookup(name);
    if (hit) return hit;
    // Try each dotted prefix as a package directory, longest first.
    const parts = name.split('.');
    for (let n = parts.length - 1; n >= 1 && !hit; n--) {
      if (this.loadPackageDir(parts.slice(0, n).join('/'))) hit = this.lookup(name);
    }
    return hit;
  }

  private lookup(name: string): protobuf.ReflectionObject | undefined {
    try {
      return this.root.lookup(name) ?? undefined;
    } catch {
      return undefined;
    }
  }

  /** Loads every .proto in a package directory; true when something new was loaded. */
  private loadPackageDir(rel: string): boolean {
    if (this.triedDirs.has(rel)) return false;
    this.triedDirs.add(rel);
    let loaded = false;
    for (const dir of this.roots) {
      const abs = path.join(dir, rel);
      if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory()) continue;
      for (const file of fs.readdirSync(abs).filter((f) => f.endsWith('.proto')).sort()) {
        const full = path.join(abs, file);
        try {
          this.root.loadSync(full, { keepCase: true });
          loaded = true;
        } catch (err) {
          this.loadFailures.set(full, err instanceof Error ? err.message : String(err));
        }
      }
    }
    if (loaded) this.applyNewerEnumValues();
    return loaded;
  }

  private applyNewerEnumValues(): void {
    for (const v of NEWER_ENUM_VALUES) {
      const e = this.lookup(v.enumName);
      if (!(e instanceof protobuf.Enum)) continue;
      if (e.values[v.value] === undefined && e.valuesById[v.number] === undefined) {
        e.add(v.value, v.number, `added by the validator: ${v.note}`);
      }
    }
  }
}

/** proto3 JSON name of a field: drop each underscore and upper-case the next character. */
export function jsonName(protoName: string): string {
  let out = '';
  let upper = false;
  for (const ch of protoName) {
    if (ch === '_') {
      upper = true;
      continue;
    }
    out += upper ? ch.toUpperCase() : ch;
    upper = false;
  }
  return out;
}

let shared: ProtoRegistry | undefined;

/** One registry per process: loading is the slow part and types never change. */
export function sharedRegistry(): ProtoRegistry {
  shared ??= new ProtoRegistry();
  return shared;
}
