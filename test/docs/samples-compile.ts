/**
 * The samples compiled as one TypeScript program against the package's sources (the
 * repository's tsconfig, with its `waymark-source` condition); each error is reported at its
 * line in the page.
 */
import { join, relative } from "node:path";
import ts from "typescript";
import type { SampleProject } from "./samples.ts";

function compilerOptions(repo: string): ts.CompilerOptions {
  const configPath = join(repo, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  return { ...ts.parseJsonConfigFileContent(config.config, ts.sys, repo, undefined, configPath).options, noEmit: true };
}

/** Type errors in the samples, each as `page:line: message` (the line in the page). */
export function typecheck(project: SampleProject, repo: string): string[] {
  const declared = join(repo, "test", "docs", "support", "provider-modules.d.ts");
  const program = ts.createProgram([...project.files.keys(), declared], compilerOptions(repo));
  const errors: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    const written = d.file ? project.files.get(d.file.fileName) : undefined;
    if (!d.file || !written) {
      // A diagnostic in a support file or the sources: shown where it is.
      if (d.file && !d.file.fileName.startsWith(project.root)) continue;
      errors.push(`${d.file ? relative(repo, d.file.fileName) : "(program)"}: ${message}`);
      continue;
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    const inSample = Math.max(0, line - written.offset);
    errors.push(`${written.sample.page}:${written.sample.line + 1 + inSample}: ${message}`);
  }
  return errors;
}
