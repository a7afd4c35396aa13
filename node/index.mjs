// The ES module entry: the same objects as the CommonJS one (index.cjs),
// so `instanceof` and the error classes agree whichever way the package is
// loaded.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const api = require('./index.cjs');

export const {
  build,
  buildAsync,
  count,
  ContextBuilder,
  Session,
  Engine,
  ContextError,
  InputError,
  CompactionError,
  BudgetExceeded,
  StoreError,
  ChatError,
  fromAiSdk,
  toAiSdk,
  OUTPUTS,
  version,
} = api;

export default api;
