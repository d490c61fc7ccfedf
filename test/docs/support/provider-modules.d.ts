/**
 * The AI SDK's provider packages the docs show (docs/guides/agents.md) and this repository does
 * not install, declared as they are typed, so the samples that import them compile. Waymark
 * itself takes any `LanguageModelV3`.
 */
declare module "@ai-sdk/openai" {
  export function openai(modelId: string): import("@ai-sdk/provider").LanguageModelV3;
}
declare module "@ai-sdk/amazon-bedrock" {
  export function bedrock(modelId: string): import("@ai-sdk/provider").LanguageModelV3;
}
