// The issues a config text is refused with, "path: message" each; [] when it parses.
import { expect } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';

export function configIssues(text: string): string[] {
  try {
    parseConfigText(text, 'config.yaml', '/base');
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  return [];
}
