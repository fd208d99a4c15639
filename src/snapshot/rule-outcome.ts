/**
 * What a rule's requests will all get when they cannot be routed: the
 * diagnostics (and, for a refused rule, the route's Accepted condition) that
 * `--check`, /debug/routes and route status report for it.
 */
import type { HTTPRoute, HTTPRouteRule, UnsupportedField } from '../model/types.js';
import { nsName, ROUTE_REASONS, routeStatus, type BuildContext } from './context.js';

export /**
 * Errors for a rule whose every request fails: one per field the router does not
 * honour (the rule is refused: Accepted=False, UnsupportedValue), or a rule with no
 * backendRefs, or only weight-0 ones (Gateway API: HTTP 500).
 */
function reportRuleOutcome(ctx: BuildContext, route: HTTPRoute, index: number, rule: HTTPRouteRule, totalWeight: number): void {
  const subject = `${ctx.localCluster}: HTTPRoute ${nsName(route.metadata.namespace, route.metadata.name)}`;
  if (rule.unsupported.length > 0) {
    const status = routeStatus(route.metadata, 'Accepted');
    for (const u of rule.unsupported) {
      ctx.diagnostics.add({
        severity: 'error',
        subject,
        path: u.path,
        reason: ROUTE_REASONS.unsupportedValue,
        message: `${u.message}; rule ${index} is refused rather than routed without it: every request it matches gets HTTP 500`,
        status,
      });
    }
    return;
  }
  const path = `spec.rules[${index}].backendRefs`;
  if (rule.backendRefs.length === 0) {
    ctx.diagnostics.add({ severity: 'error', subject, path, reason: 'NoBackendRefs', message: `rule ${index} has no backendRefs: every request it matches gets HTTP 500` });
  } else if (!(totalWeight > 0)) {
    ctx.diagnostics.add({ severity: 'error', subject, path, reason: 'NoBackendWeight', message: `every backendRef of rule ${index} has weight 0: every request it matches gets HTTP 500` });
  }
}

/**
 * A RequestHeaderModifier naming headers outside routes.requestHeaders, as a refusal:
 * Envoy's mutation_rules would silently ignore those mutations, so the rule is not
 * routed as if they applied.
 */
export function modifierOutsideEnvoy(ctx: BuildContext, rule: HTTPRouteRule, index: number): UnsupportedField | undefined {
  const m = rule.requestHeaderModifier;
  if (m === undefined) return undefined;
  const allowed = ctx.config.routes.requestHeaders;
  const names = [...m.set.map((h) => h.name), ...m.add.map((h) => h.name), ...m.remove].filter((n) => !allowed.includes(n));
  if (names.length === 0) return undefined;
  return {
    path: `spec.rules[${index}].filters`,
    feature: 'filter RequestHeaderModifier',
    message: `filter type RequestHeaderModifier: header ${[...new Set(names)].join(', ')} is not in the router's routes.requestHeaders, the headers the Envoy in front of it lets an ext_proc answer change (its mutation_rules ignore any other, so the modifier would be dropped); list it there and in Envoy's mutation_rules allow_expression`,
  };
}
