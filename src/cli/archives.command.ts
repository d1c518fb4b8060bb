import { readFile, writeFile } from 'node:fs/promises';
import { Command, Option, SubCommand } from 'nest-commander';
import { CliCommand, UsageError } from './cli-command';
import { buildArchiveFile, generateFwupKeyFiles, readFwupPrivateKey } from './archive-file';

interface KeyOptions {
  out?: string;
}

@SubCommand({
  name: 'key',
  description: 'Make a signing key pair as `fwup -g` does: <out>.priv and <out>.pub (prints the public key)',
})
export class ArchivesKeyCommand extends CliCommand<KeyOptions> {
  protected async execute(o: KeyOptions): Promise<void> {
    const out = o.out ?? 'fwup-key';
    const files = generateFwupKeyFiles();
    // `wx`: never overwrite a key someone signs with.
    await writeFile(`${out}.priv`, `${files.priv}\n`, { flag: 'wx', mode: 0o600 });
    await writeFile(`${out}.pub`, `${files.pub}\n`, { flag: 'wx' });
    this.print(
      `wrote ${out}.priv and ${out}.pub; the public key (add it with fleethub keys add or POST .../keys):`,
    );
    this.print(files.pub);
  }

  @Option({ flags: '--out <prefix>', description: 'File name prefix (default fwup-key)' })
  parseOut(value: string): string {
    return value;
  }
}

interface BuildOptions {
  file?: string;
  key?: string;
  out?: string;
  archiveVersion?: string;
  product?: string;
  platform?: string;
  architecture?: string;
  description?: string;
  author?: string;
}

@SubCommand({
  name: 'build',
  description: 'Make a signed archive of one file, as fwup -c and fwup -S would (for POST .../archives)',
})
export class ArchivesBuildCommand extends CliCommand<BuildOptions> {
  protected async execute(o: BuildOptions): Promise<void> {
    const path = this.required(o.file, '--file');
    const keyPath = this.required(o.key, '--key');
    const out = this.required(o.out, '--out');
    const version = this.required(o.archiveVersion, '--archive-version');
    const privateKey = readFwupPrivateKey(await readFile(keyPath, 'utf8'));
    const data = await readFile(path);
    const archive = buildArchiveFile(
      {
        product: o.product ?? 'archive',
        version,
        platform: o.platform ?? 'generic',
        architecture: o.architecture ?? 'generic',
        author: o.author ?? 'fleethub',
        description: o.description ?? '',
      },
      { path, data },
      privateKey,
    );
    await writeFile(out, archive);
    this.print(`wrote ${out} (${archive.length} bytes), signed with ${keyPath}`);
  }

  @Option({ flags: '--file <path>', description: 'The file the archive carries' })
  parseFile(value: string): string {
    return value;
  }
  @Option({ flags: '--key <path>', description: 'fwup private key file (fwup-key.priv)' })
  parseKey(value: string): string {
    return value;
  }
  @Option({ flags: '--out <path>', description: 'The archive to write (.fw)' })
  parseOutput(value: string): string {
    return value;
  }
  @Option({ flags: '--archive-version <semver>', description: 'meta-version, e.g. 1.0.0' })
  parseArchiveVersion(value: string): string {
    return value;
  }
  @Option({ flags: '--product <name>', description: 'meta-product (default archive)' })
  parseProduct(value: string): string {
    return value;
  }
  @Option({ flags: '--platform <name>', description: 'meta-platform (default generic)' })
  parsePlatform(value: string): string {
    return value;
  }
  @Option({ flags: '--architecture <name>', description: 'meta-architecture (default generic)' })
  parseArchitecture(value: string): string {
    return value;
  }
  @Option({ flags: '--description <text>', description: 'meta-description' })
  parseDescription(value: string): string {
    return value;
  }
  @Option({ flags: '--author <name>', description: 'meta-author (default fleethub)' })
  parseAuthor(value: string): string {
    return value;
  }
}

@Command({
  name: 'archives',
  description: 'Signed archives for deployment groups: a signing key, a signed archive of a file',
  subCommands: [ArchivesKeyCommand, ArchivesBuildCommand],
})
export class ArchivesCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    throw new UsageError(
      'usage: fleethub archives key [--out PREFIX] | archives build --file F --key K.priv --out A.fw --archive-version V',
    );
  }
}

/** The `archives` commands: local files only, no database. */
export const ARCHIVES_COMMANDS = [ArchivesCommand, ArchivesKeyCommand, ArchivesBuildCommand];
