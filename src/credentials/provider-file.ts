/**
 * The operator's provider file (the ClusterProfile credential-plugin format):
 * `providers[]` of `{name, execConfig, profileSourcedCLIArgsPolicy,
 * profileSourcedEnvVarsPolicy}`, where execConfig is a kubeconfig exec config.
 * A ClusterProfile's `status.accessProviders[]` (or the older
 * `credentialProviders[]`) names providers; the first provider of this file the
 * profile offers is the one used, and its plugin is the only command that runs
 * for that member. What a profile may add to the command line or the
 * environment is ignored unless the provider's policy allows it.
 *
 * Pure: planPluginCall() turns (file, profile) into the exact invocation.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { type AccessProvider, type ProfileCluster, firstOf } from '../sources/fleet/cluster-profile.js';

export type { AccessProvider, ProfileCluster };

/** The extension of a kubeconfig Cluster whose value becomes ExecCredential spec.cluster.config. */
export const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';
/** Profile-supplied plugin arguments (a list of strings), used only under profileSourcedCLIArgsPolicy Append. */
export const ARGS_EXTENSION = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args';
/** Profile-supplied plugin environment (a map of strings), used only under profileSourcedEnvVarsPolicy AppendIfNotExists or Replace. */
export const ENVS_EXTENSION = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs';

/** The variable that carries the ExecCredential request to a plugin. */
export const EXEC_INFO_ENV = 'KUBERNETES_EXEC_INFO';

export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const;
export type ExecApiVersion = (typeof EXEC_API_VERSIONS)[number];

const execConfigSchema = z.strictObject({
  apiVersion: z.enum(EXEC_API_VERSIONS),
  /** An absolute path, a path relative to the provider file, or a name looked up on the plugin's PATH. */
  command: z.string().min(1),
  args: z.array(z.string()).nullish(),
  env: z.array(z.strictObject({ name: z.string().min(1), value: z.string() })).nullish(),
  provideClusterInfo: z.boolean().default(false),
  /** The router has no terminal: Never and IfAvailable both mean "not interactive"; Always cannot be honoured. */
  interactiveMode: z.enum(['Never', 'IfAvailable']).optional(),
  installHint: z.string().optional(),
});

const providerSchema = z.strictObject({
  name: z.string().min(1),
  execConfig: execConfigSchema,
  profileSourcedCLIArgsPolicy: z.enum(['Append', 'Ignore']).default('Ignore'),
  profileSourcedEnvVarsPolicy: z.enum(['AppendIfNotExists', 'Replace', 'Ignore']).default('Ignore'),
});

const providerFileSchema = z.strictObject({ providers: z.array(providerSchema) }).superRefine((f, ctx) => {
  const seen = new Set<string>();
  f.providers.forEach((p, i) => {
    if (seen.has(p.name)) ctx.addIssue({ code: 'custom', path: ['providers', i, 'name'], message: `duplicate provider "${p.name}"` });
    seen.add(p.name);
  });
});

export type CredentialProvider = z.output<typeof providerSchema>;

export interface ProviderFile {
  readonly path: string;
  readonly providers: readonly CredentialProvider[];
}

export class ProviderFileError extends Error {
  override readonly name = 'ProviderFileError';
}

/** Reads and validates the provider file (JSON, or YAML); a relative command is resolved against the file's directory. */
export function loadProviderFile(path: string): ProviderFile {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ProviderFileError(`provider file ${path}: ${(err as Error).message.split('\n')[0]}`);
  }
  const parsed = providerFileSchema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(file)'}: ${i.message}`);
    throw new ProviderFileError(`provider file ${path}: ${issues.join('; ')}`);
  }
  const dir = dirname(resolve(path));
  const providers = parsed.data.providers.map((p) => {
    const command = p.execConfig.command;
    // Like a kubeconfig: a bare name is looked up on PATH, a path with a slash is relative to the file.
    const resolved = command.includes('/') && !isAbsolute(command) ? resolve(dir, command) : command;
    return { ...p, execConfig: { ...p.execConfig, command: resolved } };
  });
  return { path, providers };
}

/** Exactly what runs for one member. */
export interface PluginCall {
  readonly provider: string;
  /** The ClusterProfile, for messages ("namespace/name"). */
  readonly profile: string;
  readonly command: string;
  readonly args: readonly string[];
  /** The provider's env, then what the profile may add (by policy); inherited variables are added when it runs. */
  readonly env: Readonly<Record<string, string>>;
  /** KUBERNETES_EXEC_INFO. */
  readonly execInfo: string;
  readonly apiVersion: ExecApiVersion;
  /** The cluster the token is for (server, CA, proxy). */
  readonly cluster: ProfileCluster;
}

export type PlanResult = { readonly ok: true; readonly call: PluginCall } | { readonly ok: false; readonly message: string };

/**
 * The provider to use for a profile and its invocation. `credentialProviders` (older) and
 * `accessProviders` are both read; for one name the accessProviders entry wins. The provider
 * file's order decides among several offered.
 */
export function planPluginCall(file: ProviderFile, profile: string, accessProviders: readonly AccessProvider[], credentialProviders: readonly AccessProvider[] = []): PlanResult {
  const offered = new Map<string, AccessProvider>();
  for (const a of credentialProviders) offered.set(a.name, a);
  for (const a of accessProviders) offered.set(a.name, a);
  const provider = file.providers.find((p) => offered.has(p.name));
  const access = provider && offered.get(provider.name);
  if (!provider || !access) {
    const names = [...offered.keys()];
    return {
      ok: false,
      message: `ClusterProfile ${profile}: none of its access providers (${firstOf(names, 10, ', ') || 'none'}) is in the provider file ${file.path} (${file.providers.map((p) => p.name).join(', ') || 'empty'})`,
    };
  }
  const x = provider.execConfig;
  const args = [...(x.args ?? [])];
  const env: Record<string, string> = {};
  for (const e of x.env ?? []) env[e.name] = e.value;
  const extensions = access.cluster.extensions ?? [];
  const where = `ClusterProfile ${profile}: access provider ${provider.name}: cluster.extensions`;
  for (const ext of extensions) {
    if (ext.name === ARGS_EXTENSION && provider.profileSourcedCLIArgsPolicy === 'Append') {
      const extra = ext.extension;
      if (!Array.isArray(extra) || !extra.every((a) => typeof a === 'string')) return { ok: false, message: `${where} ${ARGS_EXTENSION}: must be a list of strings` };
      args.push(...extra);
    } else if (ext.name === ENVS_EXTENSION && provider.profileSourcedEnvVarsPolicy !== 'Ignore') {
      const extra = ext.extension;
      if (!isStringMap(extra)) return { ok: false, message: `${where} ${ENVS_EXTENSION}: must be a map of strings` };
      for (const [name, value] of Object.entries(extra)) {
        if (name === EXEC_INFO_ENV || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return { ok: false, message: `${where} ${ENVS_EXTENSION}: "${name}" may not be set` };
        if (provider.profileSourcedEnvVarsPolicy === 'Replace' || !(name in env)) env[name] = value;
      }
    }
  }
  const config = extensions.find((e) => e.name === EXEC_EXTENSION)?.extension;
  return {
    ok: true,
    call: {
      provider: provider.name,
      profile,
      command: x.command,
      args,
      env,
      execInfo: JSON.stringify(execCredentialRequest(x.apiVersion, x.provideClusterInfo ? access.cluster : undefined, config)),
      apiVersion: x.apiVersion,
      cluster: access.cluster,
    },
  };
}

/** The ExecCredential a plugin reads from KUBERNETES_EXEC_INFO: spec.cluster only when the provider asks for cluster info. */
export function execCredentialRequest(apiVersion: ExecApiVersion, cluster: ProfileCluster | undefined, config: unknown): object {
  const spec: Record<string, unknown> = { interactive: false };
  if (cluster) {
    const { extensions: _extensions, ...connection } = cluster;
    spec.cluster = { ...connection, ...(config !== undefined ? { config } : {}) };
  }
  return { kind: 'ExecCredential', apiVersion, spec };
}

function isStringMap(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}
