/** A view of issue 23 not built yet. */
export function ComingSoon({ title }: { title: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p className="notice">Coming soon: this view is not in the console yet. The API has it (see /docs).</p>
    </section>
  );
}
