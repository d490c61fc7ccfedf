/**
 * What the API reference says of one exported symbol, read with the TypeScript compiler API:
 * its kind, its declaration as a reader needs it (no bodies, no initializers, no private or
 * `@internal` members, no comments), its TSDoc text and tags, and its documented members.
 */
import ts from "typescript";

export interface Tag {
  name: string;
  text: string;
}

export interface Member {
  name: string;
  summary: string;
  defaultValue: string | undefined;
}

/** TSDoc text parts as markdown: `{@link X}` becomes `` `X` ``. */
export function textOf(parts: readonly ts.SymbolDisplayPart[]): string {
  let out = "";
  for (const part of parts) {
    if (part.kind === "link") continue;
    out += part.kind === "linkName" ? `\`${part.text}\`` : part.text;
  }
  return out.trim();
}

export function tagsOf(tags: readonly ts.JSDocTagInfo[]): Tag[] {
  return tags.map((tag) => ({ name: tag.name, text: textOf(tag.text ?? []) }));
}

export function kindOf(node: ts.Declaration): string {
  if (ts.isFunctionDeclaration(node)) return "function";
  if (ts.isClassDeclaration(node)) return "class";
  if (ts.isInterfaceDeclaration(node)) return "interface";
  if (ts.isTypeAliasDeclaration(node)) return "type";
  if (ts.isEnumDeclaration(node)) return "enum";
  if (ts.isModuleDeclaration(node)) return "namespace";
  if (ts.isVariableDeclaration(node)) {
    const list = node.parent;
    return ts.isVariableDeclarationList(list) && list.flags & ts.NodeFlags.Const ? "const" : "let";
  }
  return ts.SyntaxKind[node.kind];
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });
const DROPPED_MODIFIERS = new Set([ts.SyntaxKind.ExportKeyword, ts.SyntaxKind.DefaultKeyword, ts.SyntaxKind.DeclareKeyword]);

function keptModifiers(node: ts.HasModifiers): ts.ModifierLike[] | undefined {
  const kept = ts.getModifiers(node)?.filter((m) => !DROPPED_MODIFIERS.has(m.kind));
  return kept && kept.length > 0 ? kept : undefined;
}

function isInternal(node: ts.Node): boolean {
  return ts.getJSDocTags(node).some((tag) => tag.tagName.text === "internal");
}

function isHidden(member: ts.ClassElement | ts.TypeElement): boolean {
  if (isInternal(member)) return true;
  if (member.name && ts.isPrivateIdentifier(member.name)) return true;
  const flags = ts.getCombinedModifierFlags(member as ts.Declaration);
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

/** Parameters as a caller reads them: no modifiers, a default value shown as `?`. */
function callerParameters(params: ts.NodeArray<ts.ParameterDeclaration>): ts.ParameterDeclaration[] {
  const f = ts.factory;
  return params.map((p) =>
    f.updateParameterDeclaration(p, undefined, p.dotDotDotToken, p.name, p.questionToken ?? (p.initializer ? f.createToken(ts.SyntaxKind.QuestionToken) : undefined), p.type, undefined),
  );
}

function withoutAsync(modifiers: ts.NodeArray<ts.ModifierLike> | readonly ts.ModifierLike[] | undefined): ts.ModifierLike[] | undefined {
  const kept = modifiers?.filter((m) => m.kind !== ts.SyntaxKind.AsyncKeyword);
  return kept && kept.length > 0 ? kept : undefined;
}

/** A class member without its body or initializer; undefined for what a reader cannot use. */
function publicMember(member: ts.ClassElement, checker: ts.TypeChecker): ts.ClassElement | undefined {
  if (isHidden(member) || ts.isClassStaticBlockDeclaration(member) || ts.isSemicolonClassElement(member)) return undefined;
  const f = ts.factory;
  if (ts.isMethodDeclaration(member)) {
    return f.updateMethodDeclaration(member, withoutAsync(member.modifiers), member.asteriskToken, member.name, member.questionToken, member.typeParameters, callerParameters(member.parameters), member.type, undefined);
  }
  if (ts.isConstructorDeclaration(member)) return f.updateConstructorDeclaration(member, member.modifiers, callerParameters(member.parameters), undefined);
  if (ts.isPropertyDeclaration(member)) {
    const type = member.type ?? checker.typeToTypeNode(checker.getTypeAtLocation(member), undefined, ts.NodeBuilderFlags.NoTruncation);
    return f.updatePropertyDeclaration(member, member.modifiers, member.name, member.questionToken ?? member.exclamationToken, type, undefined);
  }
  if (ts.isGetAccessorDeclaration(member)) return f.updateGetAccessorDeclaration(member, member.modifiers, member.name, member.parameters, member.type, undefined);
  if (ts.isSetAccessorDeclaration(member)) return f.updateSetAccessorDeclaration(member, member.modifiers, member.name, member.parameters, undefined);
  return member;
}

function declarationNode(node: ts.Declaration, name: string, symbol: ts.Symbol, checker: ts.TypeChecker, siblings: readonly ts.Declaration[]): ts.Node | string | undefined {
  const f = ts.factory;
  if (ts.isFunctionDeclaration(node)) {
    // With overloads, the implementation's signature is not callable: show the overloads only.
    const overloads = siblings.filter((d) => ts.isFunctionDeclaration(d) && !d.body);
    if (node.body && overloads.length > 0) return undefined;
    return f.updateFunctionDeclaration(node, withoutAsync(keptModifiers(node)), node.asteriskToken, node.name, node.typeParameters, callerParameters(node.parameters), node.type, undefined);
  }
  if (ts.isClassDeclaration(node)) {
    const members: ts.ClassElement[] = [];
    for (const member of node.members) {
      // Overloaded methods: the implementation (with a body) after its overloads is left out.
      if (ts.isMethodDeclaration(member) && member.body) {
        const overloaded = node.members.some((m) => m !== member && ts.isMethodDeclaration(m) && !m.body && m.name.getText() === member.name.getText());
        if (overloaded) continue;
      }
      const kept = publicMember(member, checker);
      if (kept) members.push(kept);
    }
    return f.updateClassDeclaration(node, keptModifiers(node), node.name, node.typeParameters, node.heritageClauses, members);
  }
  if (ts.isInterfaceDeclaration(node)) {
    const members = node.members.filter((m) => !isHidden(m));
    return f.updateInterfaceDeclaration(node, keptModifiers(node), node.name, node.typeParameters, node.heritageClauses, members);
  }
  if (ts.isTypeAliasDeclaration(node)) return f.updateTypeAliasDeclaration(node, keptModifiers(node), node.name, node.typeParameters, node.type);
  if (ts.isEnumDeclaration(node)) return f.updateEnumDeclaration(node, keptModifiers(node), node.name, node.members);
  if (ts.isVariableDeclaration(node)) {
    const list = node.parent;
    const keyword = ts.isVariableDeclarationList(list) && list.flags & ts.NodeFlags.Const ? "const" : "let";
    const type = node.type
      ? node.type.getText()
      : checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, node), undefined, ts.TypeFormatFlags.NoTypeReduction);
    return `${keyword} ${name}: ${type};`;
  }
  return undefined;
}

/** The declaration(s) of a symbol as TypeScript, one per overload or merged declaration. */
export function declarationText(symbol: ts.Symbol, name: string, checker: ts.TypeChecker): string {
  const declarations = symbol.declarations ?? [];
  const out: string[] = [];
  for (const declaration of declarations) {
    const node = declarationNode(declaration, name, symbol, checker, declarations);
    if (node === undefined) continue;
    out.push(typeof node === "string" ? node : printer.printNode(ts.EmitHint.Unspecified, node, declaration.getSourceFile()));
  }
  return out.join("\n").trim();
}

/** The documented public members of a class or interface, in declaration order. */
export function membersOf(symbol: ts.Symbol, checker: ts.TypeChecker): Member[] {
  const members: Member[] = [];
  const seen = new Set<string>();
  for (const declaration of symbol.declarations ?? []) {
    if (!ts.isClassDeclaration(declaration) && !ts.isInterfaceDeclaration(declaration)) continue;
    for (const member of declaration.members as ts.NodeArray<ts.ClassElement | ts.TypeElement>) {
      if (isHidden(member) || !member.name) continue;
      const memberSymbol = checker.getSymbolAtLocation(member.name);
      if (!memberSymbol) continue;
      const name = memberSymbol.getName();
      if (seen.has(name)) continue;
      const summary = textOf(memberSymbol.getDocumentationComment(checker));
      const defaultTag = memberSymbol.getJsDocTags(checker).find((t) => t.name === "default" || t.name === "defaultValue");
      const defaultValue = defaultTag ? textOf(defaultTag.text ?? []) : undefined;
      if (summary === "" && defaultValue === undefined) continue;
      seen.add(name);
      members.push({ name, summary, defaultValue });
    }
  }
  return members;
}
