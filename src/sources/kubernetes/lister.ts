/**
 * Paginated LIST for one resource, returning plain JSON objects (as a watch
 * delivers them) and the list's resourceVersion. Custom resources go through
 * CustomObjectsApi (raw JSON); Services through CoreV1Api, whose typed objects
 * are turned back into plain JSON. The pages of one list share one size bound
 * (kubernetes.maxResponseBytes, asOneList): a list holds at most that much.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { GROUP_CORE } from '../../model/types.js';
import type { ResourceSpec } from './resources.js';
import { asOneList } from './response-bound.js';

export type RawObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

export interface ListResult {
  readonly items: readonly RawObject[];
  readonly resourceVersion: string;
}

/** `labelSelector`: only matching objects (custom resources and Services alike). */
export type ListFn = (spec: ResourceSpec, namespace: string | undefined, labelSelector?: string) => Promise<ListResult>;

interface Page {
  items: RawObject[];
  resourceVersion: string;
  continueToken?: string;
}

const PAGE_SIZE = 500;

export function createLister(kc: KubeConfig, pageSize = PAGE_SIZE): ListFn {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);

  const customPage = async (s: ResourceSpec, namespace: string | undefined, cont: string | undefined, labelSelector: string | undefined): Promise<Page> => {
    const common = { group: s.group, version: s.version, plural: s.plural, limit: pageSize, _continue: cont, ...(labelSelector ? { labelSelector } : {}) };
    const list = (namespace === undefined
      ? await custom.listClusterCustomObject(common)
      : await custom.listNamespacedCustomObject({ ...common, namespace })) as {
      items?: RawObject[];
      metadata?: { resourceVersion?: string; continue?: string };
    };
    return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? '', continueToken: list.metadata?.continue || undefined };
  };

  const servicePage = async (namespace: string | undefined, cont: string | undefined, labelSelector: string | undefined): Promise<Page> => {
    const common = { limit: pageSize, _continue: cont, ...(labelSelector ? { labelSelector } : {}) };
    const list = namespace === undefined ? await core.listServiceForAllNamespaces(common) : await core.listNamespacedService({ namespace, ...common });
    // Typed objects -> plain JSON (Dates become RFC 3339 strings; the Service models keep JSON field names).
    const items = JSON.parse(JSON.stringify(list.items ?? [])) as RawObject[];
    return { items, resourceVersion: list.metadata?.resourceVersion ?? '', continueToken: list.metadata?._continue || undefined };
  };

  return (s, namespace, labelSelector) =>
    asOneList(async () => {
      const items: RawObject[] = [];
      let cont: string | undefined;
      let resourceVersion = '';
      do {
        const page = s.group === GROUP_CORE ? await servicePage(namespace, cont, labelSelector) : await customPage(s, namespace, cont, labelSelector);
        items.push(...page.items);
        // Every page of one list is served at the first page's resourceVersion.
        if (resourceVersion === '') resourceVersion = page.resourceVersion;
        cont = page.continueToken;
      } while (cont !== undefined);
      return { items, resourceVersion };
    });
}
