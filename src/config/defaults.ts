/**
 * Defaults read off the schema, for code that runs without a whole parsed
 * config (tests, benchmarks, the picker's optional parameters). The schema is
 * the only place a default value is written; these are derived from it.
 */
import { extProcSchema, pickerSchema } from './schema.js';

export const DEFAULT_EXT_PROC = Object.freeze(extProcSchema.parse({}));
export const DEFAULT_PICKER = Object.freeze(pickerSchema.parse({}));
export const DEFAULT_SATURATION = Object.freeze(DEFAULT_PICKER.saturation);
