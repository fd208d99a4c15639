/**
 * A router (the data-path scenario of test/extproc/scenario.ts: the real ext_proc server,
 * simulated EPPs) in its own process, for benches that measure its CPU apart from their
 * clients. Prints {"address": "..."} on stdout when serving; stops on stdin close.
 * Environment: MCIP_BENCH_TRANSPORT (http2 | grpc-js), MCIP_BENCH_PEER_LIMITS (JSON, merged into extProc.peerLimits).
 */
import { startScenario } from '../../test/extproc/scenario.js';

const transport = process.env.MCIP_BENCH_TRANSPORT === 'grpc-js' ? 'grpc-js' : 'http2';
const peerLimits = JSON.parse(process.env.MCIP_BENCH_PEER_LIMITS ?? '{}') as Record<string, number>;
const sc = await startScenario({ transport, peerLimits });
process.stdout.write(`${JSON.stringify({ address: sc.address })}\n`);
process.stdin.resume();
process.stdin.on('end', () => void sc.stop().then(() => process.exit(0)));
