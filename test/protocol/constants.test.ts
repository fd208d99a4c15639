import { describe, expect, it } from 'vitest';
import { extProcRoot } from '../../src/protocol/codec.js';
import {
  BodySendMode,
  EXT_PROC_PROCESS_PATH,
  EXT_PROC_SERVICE,
  HEALTH_CHECK_PATH,
  HEALTH_SERVICE,
  HeaderSendMode,
  PROCESSING_REQUEST_TYPE,
  PROCESSING_RESPONSE_TYPE,
  ResponseStatus,
} from '../../src/protocol/constants.js';

describe('constants agree with our protos', () => {
  it('enum mirrors match the .proto enums', () => {
    const mode = 'envoy.extensions.filters.http.ext_proc.v3.ProcessingMode';
    expect(extProcRoot.lookupEnum(`${mode}.BodySendMode`).values).toEqual(BodySendMode);
    expect(extProcRoot.lookupEnum(`${mode}.HeaderSendMode`).values).toEqual(HeaderSendMode);
    expect(extProcRoot.lookupEnum('envoy.service.ext_proc.v3.CommonResponse.ResponseStatus').values).toEqual(ResponseStatus);
    expect(BodySendMode).toEqual({ NONE: 0, STREAMED: 1, BUFFERED: 2, BUFFERED_PARTIAL: 3, FULL_DUPLEX_STREAMED: 4, GRPC: 5 });
  });

  it('service, method and type names resolve', () => {
    const svc = extProcRoot.lookupService(EXT_PROC_SERVICE);
    expect(svc.methods['Process']).toBeDefined();
    expect(EXT_PROC_PROCESS_PATH).toBe(`/${EXT_PROC_SERVICE}/Process`);
    expect(HEALTH_CHECK_PATH).toBe(`/${HEALTH_SERVICE}/Check`);
    expect(extProcRoot.lookupType(PROCESSING_REQUEST_TYPE).name).toBe('ProcessingRequest');
    expect(extProcRoot.lookupType(PROCESSING_RESPONSE_TYPE).name).toBe('ProcessingResponse');
  });
});
