/**
 * Whether a kubeconfig's current user runs a command for its credentials, as
 * @kubernetes/client-node decides it: its authenticators take a user's `exec`,
 * an auth-provider named `exec` or carrying `config.exec` (whatever its name),
 * and the cloud auth-providers; only client-node's own in-cluster `tokenFile`
 * provider runs nothing. Such a command may also hand out a client certificate.
 */
import type { KubeConfig } from '@kubernetes/client-node';

/** The credential plugin of the current user ("an exec plugin (cmd)", "the auth-provider gcp"), if any. */
export function credentialPlugin(kc: KubeConfig): string | undefined {
  const user = kc.getCurrentUser();
  if (!user) return undefined;
  const exec = user.exec as { command?: unknown } | undefined;
  if (exec) return `an exec plugin (${typeof exec.command === 'string' ? exec.command : 'no command'})`;
  const provider = user.authProvider as { name?: unknown; config?: { exec?: { command?: unknown } } } | undefined;
  if (!provider) return undefined;
  const providerExec = provider.config?.exec;
  if (providerExec) return `an exec plugin (${typeof providerExec.command === 'string' ? providerExec.command : 'no command'}) in the auth-provider ${String(provider.name ?? '(unnamed)')}`;
  // client-node's own in-cluster user reads the service-account token file: no command.
  if (provider.name !== 'tokenFile') return `the auth-provider ${String(provider.name ?? '(unnamed)')}`;
  return undefined;
}
