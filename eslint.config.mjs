// ESLint for the frontend, its unit tests and the browser tests: the JupyterLab extension
// template's configuration (ESLint 9, typescript-eslint, @jupyter/eslint-plugin, Prettier).
import js from '@eslint/js';
import jupyterPlugin from '@jupyter/eslint-plugin';
import { defineConfig } from 'eslint/config';
import prettierRecommended from 'eslint-plugin-prettier/recommended';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig([
  {
    ignores: [
      'node_modules',
      '**/node_modules',
      'lib',
      'jupyter_air',
      'coverage',
      '**/*.js',
      '**/*.d.ts',
      '.venv',
      'ui-tests/test-results',
      'ui-tests/playwright-report',
      'ui-tests/.air-home',
      // Browser scripts of the Python benchmarks (python -m benchmarks ui), outside the extension.
      'benchmarks'
    ]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    plugins: {
      jupyter: jupyterPlugin
    }
  },
  jupyterPlugin.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    languageOptions: {
      globals: {
        ...globals.browser,
        ...globals.es2015,
        ...globals.node
      },
      parserOptions: {
        sourceType: 'module'
      }
    },
    rules: {
      '@typescript-eslint/naming-convention': [
        'error',
        {
          selector: 'interface',
          format: ['PascalCase'],
          custom: {
            regex: '^I[A-Z]',
            match: true
          }
        }
      ],
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-use-before-define': 'off',
      quotes: ['error', 'single', { avoidEscape: true, allowTemplateLiterals: false }],
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error'
    }
  },
  {
    // Type information for the rules that use it (e.g. @jupyter/eslint-plugin's command rules).
    files: ['src/**/*.ts', 'src/**/*.tsx', 'ui-tests/**/*.ts'],
    languageOptions: {
      parserOptions: {
        project: ['tsconfig.test.json', 'ui-tests/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname
      }
    }
  },
  prettierRecommended
]);
