import { Validator, type Schema } from '@cfworker/json-schema';

type JsonSchema = Record<string, unknown>;

/**
 * What @rjsf/core asks of its validator (its ValidatorType; json-form.tsx hands this to the form,
 * where the compiler checks the two agree). Written out here so the module carries no React types.
 */
export interface FormValidator {
  validateFormData(formData: unknown, schema: JsonSchema): { errors: never[]; errorSchema: Record<string, never> };
  isValid(schema: JsonSchema, formData: unknown, rootSchema: JsonSchema): boolean;
  rawValidation<Result = { message: string; instancePath: string }>(schema: JsonSchema, formData?: unknown): { errors?: Result[] };
}

/**
 * The validator the form library asks which `oneOf` / `anyOf` / `if` branch a value matches
 * (@cfworker/json-schema: a small interpreter, where @rjsf/validator-ajv8 brought ajv's compiler,
 * 64 KB gzipped, into the console's budget). It never judges a submitted value: the server does,
 * and its 400 puts each problem at its field (json-form.tsx).
 */
export const schemaMatcher: FormValidator = {
  validateFormData: () => ({ errors: [], errorSchema: {} }),
  isValid(schema, formData, rootSchema) {
    return matches(withDefinitionsOf(schema, rootSchema), formData).valid;
  },
  rawValidation<Result>(schema: JsonSchema, formData?: unknown) {
    const result = matches(schema, formData);
    return { errors: result.errors.map((error) => ({ message: error.error, instancePath: error.instanceLocation }) as Result) };
  },
};

/** A branch with the root's definitions beside it, so its `$ref`s resolve. */
function withDefinitionsOf(schema: JsonSchema, root: JsonSchema): JsonSchema {
  return { ...schema, ...(root.definitions ? { definitions: root.definitions } : {}), ...(root.$defs ? { $defs: root.$defs } : {}) };
}

function matches(schema: JsonSchema, value: unknown) {
  // shortCircuit: whether a value matches is all the form library asks.
  return new Validator(schema as Schema, '2020-12', true).validate(value ?? null);
}
