/**
 * The member agent's side of the hub: watches every member's record (one
 * cluster-wide watch of MemberExportRecords, the only thing its RBAC lets it read
 * there) and writes its own, in its own namespace only.
 *
 * - Each record is decoded (export-agent-record.ts); a refused one is left out and
 *   reported once per version, naming the record and the field.
 * - Freshness is measured on OUR clock from when a record's resourceVersion last
 *   changed (as leader election does), so clock skew between members does not
 *   matter: unchanged for staleAfterMs, the member counts as unreachable.
 * - Losing the hub keeps the last known records (stale, as a member's last known
 *   objects are kept in hub/spoke).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { FieldError } from '../model/types.js';
import { httpStatusOf } from '../sources/kubernetes/api-errors.js';
import type { BoundedKubeConfig } from '../sources/kubernetes/api-access.js';
import { Backoff, TokenBucket } from '../sources/kubernetes/backoff.js';
import { Coalescer } from '../sources/kubernetes/coalescer.js';
import { ResourceInformer, type InformerStatus } from '../sources/kubernetes/informer.js';
import type { WatchPacing } from '../sources/kubernetes/kubernetes-source.js';
import { createLister, type ListFn } from '../sources/kubernetes/lister.js';
import { resourceName } from '../sources/kubernetes/resources.js';
import { decodeRecord, RECORD_SPEC, sameRecordContent, type MemberRecord, type RecordDecode, type RecordSpec } from './export-agent-record.js';

export interface HubRecordsOptions extends WatchPacing {
  readonly kubeConfig: BoundedKubeConfig;
  readonly namespacePrefix: string;
  readonly staleAfterMs: number;
  readonly logger: Logger;
  readonly now: () => number;
  readonly list?: ListFn;
}

/** A member's record as last read, with how fresh it is. */
export interface HubMember {
  readonly record: MemberRecord;
  readonly fresh: boolean;
  /** ms since its record last changed (our clock). */
  readonly quietMs: number;
}

export interface HubDebug {
  readonly resource: string;
  readonly state: InformerStatus['state'];
  readonly message?: string;
  readonly records: number;
  readonly refused: readonly FieldError[];
}

export class HubRecords {
  private informer: ResourceInformer<RecordDecode> | undefined;
  private readonly coalescer: Coalescer;
  /** member -> resourceVersion last seen and when (our clock). */
  private readonly seen = new Map<string, { rv: string; at: number }>();
  private readonly reported = new Set<string>();
  private everSynced = false;
  private onChange: () => void = () => undefined;

  constructor(private readonly o: HubRecordsOptions) {
    this.coalescer = new Coalescer(() => this.onChange(), o.coalesceMs, o.coalesceMaxMs);
  }

  /** Starts the watch; resolves after the first list came back or failed (or initialSyncTimeoutMs). `onChange`: records or the watch's state changed. */
  async start(onChange: () => void): Promise<void> {
    this.onChange = onChange;
    const informer = new ResourceInformer<RecordDecode>({
      spec: RECORD_SPEC,
      namespace: undefined,
      list: this.o.list ?? createLister(this.o.kubeConfig),
      watch: this.o.kubeConfig.watch,
      limiter: new TokenBucket(this.o.qps, this.o.burst),
      backoff: new Backoff(this.o.backoffInitialMs, this.o.backoffMaxMs),
      decode: (raw) => decodeRecord(raw, this.o.namespacePrefix),
      onChange: () => this.coalescer.trigger(),
      onStatus: (s) => {
        if (s.state === 'synced') this.everSynced = true;
        if (s.state === 'failed') this.o.logger.warn({ reason: s.failure.reason }, `hub export records: ${s.failure.message}; the last known records stay; retrying with backoff`);
        this.coalescer.trigger();
      },
      watchTimeoutSeconds: this.o.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      logger: this.o.logger,
    });
    this.informer = informer;
    informer.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([informer.firstOutcome(), new Promise<void>((r) => (timer = setTimeout(r, this.o.initialSyncTimeoutMs)))]);
    clearTimeout(timer);
  }

  /** The hub was listed once since start: the set of members is known. */
  get synced(): boolean {
    return this.everSynced;
  }

  /** The watch is current (not failed or re-listing). */
  get reachable(): boolean {
    return this.informer?.status.state === 'synced';
  }

  /** Every valid record, by member, with its freshness; refused ones are logged once. */
  members(): Map<string, HubMember> {
    const now = this.o.now();
    const out = new Map<string, HubMember>();
    for (const { result } of this.informer?.store.values() ?? []) {
      if (!result.ok) {
        this.report(result.error);
        continue;
      }
      const r = result.record;
      const last = this.seen.get(r.cluster);
      if (!last || last.rv !== r.resourceVersion) this.seen.set(r.cluster, { rv: r.resourceVersion, at: now });
      const quietMs = now - (this.seen.get(r.cluster)?.at ?? now);
      out.set(r.cluster, { record: r, fresh: this.reachable && quietMs < this.o.staleAfterMs, quietMs });
    }
    for (const m of [...this.seen.keys()]) if (!out.has(m)) this.seen.delete(m);
    return out;
  }

  debug(): HubDebug {
    const s = this.informer?.status ?? { state: 'pending' as const };
    const refused = [...(this.informer?.store.values() ?? [])].flatMap(({ result }) => (result.ok ? [] : [result.error]));
    return {
      resource: resourceName(RECORD_SPEC),
      state: s.state,
      ...(s.state === 'failed' ? { message: s.failure.message } : {}),
      records: this.informer?.store.size ?? 0,
      refused,
    };
  }

  stop(): void {
    this.coalescer.cancel();
    this.informer?.stop();
  }

  private report(e: FieldError): void {
    const key = `${e.object}\u0000${e.path}\u0000${e.message}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.o.logger.warn({ object: e.object, field: e.path, reason: e.reason }, `${e.object}: ${e.path}: ${e.message}`);
  }
}

/** Writes this member's own record (get, then create or replace with the read resourceVersion). */
export interface RecordClient {
  get(namespace: string, name: string): Promise<{ metadata?: { resourceVersion?: string }; spec?: unknown } | undefined>;
  create(namespace: string, name: string, spec: RecordSpec): Promise<void>;
  replace(namespace: string, name: string, resourceVersion: string | undefined, spec: RecordSpec): Promise<void>;
}

export function createRecordClient(kc: KubeConfig): RecordClient {
  const api = kc.makeApiClient(CustomObjectsApi);
  const { group, version, plural, apiVersion, kind } = RECORD_SPEC;
  const body = (namespace: string, name: string, spec: RecordSpec, resourceVersion?: string) => ({
    apiVersion,
    kind,
    metadata: { namespace, name, ...(resourceVersion !== undefined ? { resourceVersion } : {}) },
    spec,
  });
  return {
    async get(namespace, name) {
      try {
        return (await api.getNamespacedCustomObject({ group, version, plural, namespace, name })) as { metadata?: { resourceVersion?: string }; spec?: unknown };
      } catch (err) {
        if (httpStatusOf(err) === 404) return undefined;
        throw err;
      }
    },
    async create(namespace, name, spec) {
      await api.createNamespacedCustomObject({ group, version, plural, namespace, body: body(namespace, name, spec) });
    },
    async replace(namespace, name, resourceVersion, spec) {
      await api.replaceNamespacedCustomObject({ group, version, plural, namespace, name, body: body(namespace, name, spec, resourceVersion) });
    },
  };
}

/**
 * Publishes `spec` when its content differs from what we last wrote, or when the
 * heartbeat asks for a renewal (`renew`). Returns what it did.
 */
export async function publishRecord(
  client: RecordClient,
  namespace: string,
  name: string,
  spec: RecordSpec,
  last: RecordSpec | undefined,
  renew: boolean,
): Promise<'unchanged' | 'written'> {
  if (last && sameRecordContent(last, spec) && !renew) return 'unchanged';
  const live = await client.get(namespace, name);
  if (!live) await client.create(namespace, name, spec);
  else await client.replace(namespace, name, live.metadata?.resourceVersion, spec);
  return 'written';
}
