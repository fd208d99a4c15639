/**
 * The API calls of the Gateway API status writer: list GatewayClasses, get an
 * object with its status, merge-patch its /status. Narrow so tests can fake it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { GROUP_GATEWAY } from '../model/types.js';
import { httpStatusOf } from '../sources/kubernetes/api-errors.js';

export type GatewayApiKind = 'GatewayClass' | 'Gateway' | 'HTTPRoute';

export type RawObject = {
  metadata?: { name?: string; resourceVersion?: string; generation?: number };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

export interface GatewayStatusClient {
  listClasses(): Promise<RawObject[]>;
  /** undefined when the object does not exist (404). `namespace` is '' for GatewayClasses. */
  get(kind: GatewayApiKind, namespace: string, name: string): Promise<RawObject | undefined>;
  /** Merge-patch of /status; rejects with the HTTP status in `code` (409 on a stale resourceVersion). */
  patchStatus(kind: GatewayApiKind, namespace: string, name: string, patch: object): Promise<RawObject>;
}

const PLURAL: Record<GatewayApiKind, string> = { GatewayClass: 'gatewayclasses', Gateway: 'gateways', HTTPRoute: 'httproutes' };
const VERSION = 'v1';
const PAGE = 500;

export function createGatewayStatusClient(kc: KubeConfig): GatewayStatusClient {
  const api = kc.makeApiClient(CustomObjectsApi);
  const group = GROUP_GATEWAY;
  const version = VERSION;
  return {
    async listClasses() {
      const items: RawObject[] = [];
      let token: string | undefined;
      do {
        const page = (await api.listClusterCustomObject({ group, version, plural: PLURAL.GatewayClass, limit: PAGE, ...(token ? { _continue: token } : {}) })) as {
          items?: RawObject[];
          metadata?: { continue?: string };
        };
        items.push(...(page.items ?? []));
        token = page.metadata?.continue || undefined;
      } while (token);
      return items;
    },
    async get(kind, namespace, name) {
      const plural = PLURAL[kind];
      try {
        const o = kind === 'GatewayClass'
          ? await api.getClusterCustomObjectStatus({ group, version, plural, name })
          : await api.getNamespacedCustomObjectStatus({ group, version, plural, namespace, name });
        return o as RawObject;
      } catch (err) {
        if (httpStatusOf(err) === 404) return undefined;
        throw err;
      }
    },
    async patchStatus(kind, namespace, name, body) {
      const plural = PLURAL[kind];
      const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      const o = kind === 'GatewayClass'
        ? await api.patchClusterCustomObjectStatus({ group, version, plural, name, body }, options)
        : await api.patchNamespacedCustomObjectStatus({ group, version, plural, namespace, name, body }, options);
      return o as RawObject;
    },
  };
}
