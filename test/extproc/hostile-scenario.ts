// The data-path scenario with pool-a's EPP replaced by a hostile one (test/harness/hostile-epp.ts),
// and the request headers answer that routes to a destination as a GIE EPP does.
import { afterEach } from 'vitest';
import { headerOption } from '../../src/protocol/responses.js';
import { toStruct } from '../../src/protocol/struct.js';
import { startHostileEpp, type HostileEpp, type HostileEppOptions } from '../harness/hostile-epp.js';
import { buildScenarioSnapshot, startScenario, type Scenario, type ScenarioOptions } from './scenario.js';

export const DEST = 'x-gateway-destination-endpoint';

/** A scenario whose pool-a EPP is a hostile EPP behaving per `h`. */
export async function startHostileScenario(h: HostileEppOptions, o: ScenarioOptions = {}): Promise<{ sc: Scenario; hostile: HostileEpp }> {
  const hostile = await startHostileEpp(h);
  const sc = await startScenario(o);
  sc.setSnapshot(buildScenarioSnapshot({ eppA: hostile.address, eppB: sc.eppB.address, failureModeA: o.failureModeA, clusterA: o.clusterA, clusterB: o.clusterB }));
  return { sc, hostile };
}

/** The request headers answer routing to `dest`: the header (with clear_route_cache) and envoy.lb metadata. */
export const routeTo = (dest: string) => ({
  request_headers: { response: { clear_route_cache: true, header_mutation: { set_headers: [headerOption(DEST, dest)] } } },
  dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: dest } }),
});

/** One hostile scenario per test, stopped after it: `start` it, then read `sc` and `hostile`. */
export function hostileFixture(): { sc: Scenario | undefined; hostile: HostileEpp | undefined; start(h: HostileEppOptions, o?: ScenarioOptions): Promise<Scenario> } {
  const f = {
    sc: undefined as Scenario | undefined,
    hostile: undefined as HostileEpp | undefined,
    async start(h: HostileEppOptions, o: ScenarioOptions = {}): Promise<Scenario> {
      ({ sc: f.sc, hostile: f.hostile } = await startHostileScenario(h, o));
      return f.sc!;
    },
  };
  afterEach(async () => {
    await f.sc?.stop();
    await f.hostile?.stop();
    f.sc = f.hostile = undefined;
  });
  return f;
}
