// The data-path metrics RouterMetrics exposes for the ext_proc observer: picks by reason,
// failovers by cluster pair and reason, EPP stream and first-response histograms per cluster.
import { describe, expect, it } from 'vitest';
import { RouterMetrics } from '../../src/admin/metrics.js';

describe('RouterMetrics as the DataPathObserver', () => {
  it('counts picks and failovers, and times EPP attempts per cluster', async () => {
    const m = new RouterMetrics({ defaultMetrics: false });
    m.pickedFor('weighted');
    m.pickedFor('weighted');
    m.pickedFor('failover');
    m.pickedFor('fail-open');
    m.failover('cluster-a', 'cluster-b', 'connect');
    m.eppFirstResponse('cluster-a', 0.004);
    m.eppStreamFinished('cluster-a', 1.5);
    const text = await m.registry.metrics();
    expect(text).toContain('mcip_picks_total{reason="weighted"} 2');
    expect(text).toContain('mcip_picks_total{reason="failover"} 1');
    expect(text).toContain('mcip_picks_total{reason="fail-open"} 1');
    expect(text).toContain('mcip_failovers_total{from_cluster="cluster-a",to_cluster="cluster-b",reason="connect"} 1');
    expect(text).toContain('mcip_epp_first_response_seconds_count{cluster="cluster-a"} 1');
    expect(text).toContain('mcip_epp_first_response_seconds_bucket{le="0.005",cluster="cluster-a"} 1');
    expect(text).toContain('mcip_epp_stream_duration_seconds_count{cluster="cluster-a"} 1');
    expect(text).toContain('mcip_epp_stream_duration_seconds_sum{cluster="cluster-a"} 1.5');
  });
});
