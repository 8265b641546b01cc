// ESLint flat config for the VS Code extension (TypeScript, type-aware) and the e2e driver.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["extension/out/**", "extension/bundled/**", "node_modules/**", "build/**", "test-output/**"] },
  {
    files: ["extension/src/**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { project: ["./tsconfig.json", "./tsconfig.test.json"], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      "curly": "error",
      "eqeqeq": "error",
    },
  },
  {
    files: ["**/*.mjs"],
    extends: [js.configs.recommended],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: {
        process: "readonly", console: "readonly", setTimeout: "readonly", clearTimeout: "readonly",
        Buffer: "readonly", URL: "readonly", setInterval: "readonly", clearInterval: "readonly", fetch: "readonly",
      },
    },
  },
);
