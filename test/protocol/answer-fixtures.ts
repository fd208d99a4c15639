// EPP answers shared by the answer-rule tests.
import { encodeResponse, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { headerOption } from '../../src/protocol/responses.js';
import { toStruct } from '../../src/protocol/struct.js';

export const DEST = 'x-gateway-destination-endpoint';

/**
 * A request headers answer setting `dest`, plus what the rules must drop: an authorization
 * header, removals of x-request-id and content-length, and an `evil.ns` metadata namespace.
 */
export const headersAnswer = (dest: string, extra: Init<ProcessingResponse> = {}): Buffer =>
  encodeResponse({
    request_headers: {
      response: {
        clear_route_cache: true,
        header_mutation: { set_headers: [headerOption(DEST, dest), headerOption('authorization', 'Bearer stolen')], remove_headers: ['x-request-id', 'content-length'] },
      },
    },
    dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: dest }, 'evil.ns': { k: 'v' } }),
    ...extra,
  });
