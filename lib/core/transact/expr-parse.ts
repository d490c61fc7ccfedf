/**
 * A parser for the subset of DynamoDB's expression language that the local and testing
 * runtimes evaluate (expr-eval.ts). Anything outside the subset is refused with
 * {@link UnsupportedExpressionError}, never guessed at:
 *
 *   condition  := or
 *   or         := and ("OR" and)*            precedence, as DynamoDB's: NOT, then AND, then OR
 *   and        := not ("AND" not)*
 *   not        := "NOT" not | primary
 *   primary    := "(" condition ")" | attribute_exists(path) | attribute_not_exists(path)
 *               | begins_with(operand, operand) | operand comparator operand
 *   comparator := = | <> | < | <= | > | >=
 *   update     := ("SET" set ("," set)* | "REMOVE" path ("," path)* | "ADD" path operand ("," …)*)+
 *   set        := path "=" value;  value := term (("+" | "-") term)?;  term := operand | if_not_exists(path, operand)
 *   operand    := path | :value;   path := name ("." name)*;  name := identifier | #placeholder
 */
import { UnsupportedExpressionError } from "./errors.ts";

export type Path = readonly string[];
export type Operand = { kind: "path"; path: Path } | { kind: "value"; name: string };
export type Comparator = "=" | "<>" | "<" | "<=" | ">" | ">=";
export type Condition =
  | { kind: "compare"; op: Comparator; left: Operand; right: Operand }
  | { kind: "exists"; path: Path; negated: boolean }
  | { kind: "beginsWith"; subject: Operand; prefix: Operand }
  | { kind: "and" | "or"; left: Condition; right: Condition }
  | { kind: "not"; inner: Condition };
export type Term = Operand | { kind: "ifNotExists"; path: Path; fallback: Operand };
export type SetValue = { kind: "term"; term: Term } | { kind: "arith"; op: "+" | "-"; left: Term; right: Term };
export interface UpdateActions {
  set: Array<{ path: Path; value: SetValue }>;
  remove: Path[];
  add: Array<{ path: Path; value: Operand }>;
}

/**
 * Reserved words DynamoDB refuses as bare attribute names (a partial list; each is checked
 * against DynamoDB Local in the tests). Name such an attribute through `names` (`#s`).
 */
export const RESERVED_WORDS: ReadonlySet<string> = new Set(
  ("ACTION ADD AND BETWEEN BINARY BOOLEAN COMMENT CONNECTION COUNT DATA DATE DAY DELETE FROM GROUP HASH HOUR IN INDEX " +
    "ITEMS KEY KEYS LANGUAGE LEVEL LIMIT LIST MAP MINUTE MISSING MONTH NAME NEW NOT NUMBER OR ORDER OWNER PATH RANGE REMOVE RESULT " +
    "ROLE SCHEMA SECOND SELECT SESSION SET SOURCE STATE STATUS STRING TABLE TIME TIMESTAMP TOTAL TYPE UPDATE USER " +
    "VALUE VALUES WHERE YEAR ZONE").split(" "),
);

/** An expression of the subset that DynamoDB refuses all the same (a ValidationException): wrapped with the step by the caller. */
export class ExpressionDataError extends Error {
  override readonly name = "ExpressionDataError" as const;
}

type Token = { t: "word" | "name" | "value" | "op" | "punct"; v: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const re = /\s+|(<>|<=|>=|=|<|>)|([(),.+\-])|(#[A-Za-z0-9_]+)|(:[A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_]*)|(.)/gy;
  for (let m = re.exec(text); m && m.index < text.length; m = re.exec(text)) {
    if (m[1]) tokens.push({ t: "op", v: m[1] });
    else if (m[2]) tokens.push({ t: "punct", v: m[2] });
    else if (m[3]) tokens.push({ t: "name", v: m[3] });
    else if (m[4]) tokens.push({ t: "value", v: m[4] });
    else if (m[5]) tokens.push({ t: "word", v: m[5] });
    else if (m[6]) throw new UnsupportedExpressionError(text, m[6] === "[" ? "list indexes ([n]) are not supported" : `unexpected "${m[6]}"`);
  }
  return tokens;
}

class Parser {
  private i = 0;
  private readonly tokens: Token[];
  constructor(
    private readonly text: string,
    private readonly names: Readonly<Record<string, string>>,
  ) {
    this.tokens = tokenize(text);
  }

  fail(problem: string): never {
    throw new UnsupportedExpressionError(this.text, problem);
  }
  peek(): Token | undefined {
    return this.tokens[this.i];
  }
  atEnd(): boolean {
    return this.i >= this.tokens.length;
  }
  next(): Token {
    const t = this.tokens[this.i++];
    return t ?? this.fail("it ends too early");
  }
  keyword(word: string): boolean {
    const t = this.peek();
    if (t?.t === "word" && t.v.toUpperCase() === word) {
      this.i++;
      return true;
    }
    return false;
  }
  punct(v: string): boolean {
    const t = this.peek();
    if (t?.t === "punct" && t.v === v) {
      this.i++;
      return true;
    }
    return false;
  }
  expect(v: string): void {
    if (!this.punct(v)) this.fail(`expected "${v}" near "${this.peek()?.v ?? "the end"}"`);
  }

  condition(): Condition {
    let left = this.and();
    while (this.keyword("OR")) left = { kind: "or", left, right: this.and() };
    return left;
  }
  private and(): Condition {
    let left = this.not();
    while (this.keyword("AND")) left = { kind: "and", left, right: this.not() };
    return left;
  }
  private not(): Condition {
    if (this.keyword("NOT")) return { kind: "not", inner: this.not() };
    return this.primary();
  }
  private primary(): Condition {
    if (this.punct("(")) {
      const inner = this.condition();
      this.expect(")");
      return inner;
    }
    const t = this.peek();
    const fn = t?.t === "word" ? t.v : "";
    if (fn === "attribute_exists" || fn === "attribute_not_exists") {
      this.i++;
      this.expect("(");
      const path = this.path();
      this.expect(")");
      return { kind: "exists", path, negated: fn === "attribute_not_exists" };
    }
    if (fn === "begins_with") {
      this.i++;
      this.expect("(");
      const subject = this.operand();
      this.expect(",");
      const prefix = this.operand();
      this.expect(")");
      return { kind: "beginsWith", subject, prefix };
    }
    const left = this.operand();
    const op = this.peek();
    if (op?.t === "word" && ["BETWEEN", "IN"].includes(op.v.toUpperCase())) this.fail(`${op.v.toUpperCase()} is not supported`);
    if (op?.t !== "op") this.fail(`expected a comparator after the operand, found "${op?.v ?? "the end"}"`);
    this.i++;
    const right = this.operand();
    if (left.kind === right.kind && JSON.stringify(left) === JSON.stringify(right)) throw new ExpressionDataError(`the first operand must be distinct from the second (${this.text})`);
    return { kind: "compare", op: op.v as Comparator, left, right };
  }

  operand(): Operand {
    const t = this.peek();
    if (t?.t === "value") {
      this.i++;
      return { kind: "value", name: t.v };
    }
    return { kind: "path", path: this.path() };
  }

  path(): Path {
    const parts = [this.name()];
    while (this.punct(".")) parts.push(this.name());
    return parts;
  }
  private name(): string {
    const t = this.next();
    if (t.t === "name") return this.names[t.v] ?? this.fail(`${t.v} is not defined in names`);
    if (t.t !== "word") this.fail(`expected an attribute name, found "${t.v}"`);
    if (this.peek()?.v === "(") this.fail(`the function ${t.v}() is not supported`);
    if (RESERVED_WORDS.has(t.v.toUpperCase())) this.fail(`"${t.v}" is a DynamoDB reserved word: name it through \`names\` (e.g. "#${t.v}")`);
    return t.v;
  }

  update(): UpdateActions {
    const actions: UpdateActions = { set: [], remove: [], add: [] };
    const seen = new Set<string>();
    while (!this.atEnd()) {
      const t = this.next();
      const clause = t.t === "word" ? t.v.toUpperCase() : "";
      if (clause === "DELETE") this.fail("the DELETE clause (sets) is not supported");
      if (clause !== "SET" && clause !== "REMOVE" && clause !== "ADD") this.fail(`expected SET, REMOVE or ADD, found "${t.v}"`);
      if (seen.has(clause)) this.fail(`the ${clause} clause appears twice`);
      seen.add(clause);
      do {
        const path = this.path();
        if (clause === "REMOVE") actions.remove.push(path);
        else if (clause === "ADD") actions.add.push({ path, value: this.operand() });
        else {
          if (this.next().v !== "=") this.fail("expected \"=\" in a SET action");
          actions.set.push({ path, value: this.setValue() });
        }
      } while (this.punct(","));
    }
    return actions;
  }
  private setValue(): SetValue {
    const left = this.term();
    const t = this.peek();
    if (t?.t === "punct" && (t.v === "+" || t.v === "-")) {
      this.i++;
      return { kind: "arith", op: t.v, left, right: this.term() };
    }
    return { kind: "term", term: left };
  }
  private term(): Term {
    const t = this.peek();
    if (t?.t === "word" && t.v === "if_not_exists") {
      this.i++;
      this.expect("(");
      const path = this.path();
      this.expect(",");
      const fallback = this.operand();
      this.expect(")");
      return { kind: "ifNotExists", path, fallback };
    }
    return this.operand();
  }
}

/** Parses a condition expression of the subset; `names` resolves `#placeholders`. */
export function parseCondition(text: string, names: Readonly<Record<string, string>> = {}): Condition {
  const p = new Parser(text, names);
  const c = p.condition();
  if (!p.atEnd()) p.fail(`unexpected "${p.peek()?.v}" after a complete condition`);
  return c;
}

/** Parses an update expression of the subset. */
export function parseUpdate(text: string, names: Readonly<Record<string, string>> = {}): UpdateActions {
  const actions = new Parser(text, names).update();
  if (actions.set.length + actions.remove.length + actions.add.length === 0) throw new UnsupportedExpressionError(text, "an update expression needs at least one action");
  return actions;
}
