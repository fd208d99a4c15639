/**
 * What a rule's requests will all get when they cannot be routed: the
 * diagnostics (and, for a refused rule, the route's Accepted condition) that
 * `--check`, /debug/routes and route status report for it.
 */
import type { HTTPRoute, HTTPRouteRule } from '../model/types.js';
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
