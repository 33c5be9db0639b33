/** Whether a parsed JSON document contains the filter it was made from. */
export type ContainmentTest = (doc: unknown) => boolean;

const isScalar = (value: unknown): boolean => value === null || typeof value !== 'object';

/**
 * PostgreSQL's jsonb containment (`doc @> wanted`, below the top level) as a test compiled
 * once per filter: an object contains another when every key of it is present with a
 * containing value; an array when every element of it is contained by some element; a scalar
 * only equals itself (numbers by value).
 *
 * The scalar elements of a wanted array are found in one pass over the document's array (a Set
 * lookup per element), so a 20-element filter over 300-element arrays costs 300 lookups, not
 * 6,000 comparisons; only object and array elements are compared element by element.
 */
export function containmentTest(wanted: unknown): ContainmentTest {
  if (isScalar(wanted)) return (doc) => doc === wanted;
  if (Array.isArray(wanted)) {
    const scalars = new Set(wanted.filter(isScalar));
    const nested = wanted.filter((element) => !isScalar(element)).map(containmentTest);
    return (doc) => {
      if (!Array.isArray(doc)) return false;
      if (scalars.size > 0) {
        const found = new Set<unknown>();
        for (const element of doc) if (scalars.has(element)) found.add(element);
        if (found.size < scalars.size) return false;
      }
      return nested.every((test) => doc.some(test));
    };
  }
  const entries = Object.entries(wanted as Record<string, unknown>).map(([key, value]) => [key, containmentTest(value)] as const);
  return (doc) => {
    if (isScalar(doc) || Array.isArray(doc)) return false;
    const object = doc as Record<string, unknown>;
    return entries.every(([key, test]) => Object.hasOwn(object, key) && test(object[key]));
  };
}
