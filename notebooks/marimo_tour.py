import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    import wm_kernel
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket

    return PeanutGalleryTrinket, mo, wm_kernel


@app.cell
def _(mo):
    mo.md("""
    # wm-kernel in marimo

    marimo runs no IPython magics and no ipywidgets, but it renders any anywidget: the
    dashboard is one. `wm_kernel.dashboard(session)` makes it and `mo.ui.anywidget` shows
    it; its synced traits are the element's value, so a cell that reads
    `dashboard.value["turn"]` runs again whenever the slider (or Play) moves the turn on view.
    """)
    return


@app.cell
def _(PeanutGalleryTrinket, wm_kernel):
    # a session with short-lived guidance, six turns on: a deterministic clock, as every notebook
    session = wm_kernel.Session(
        base_prompt="You help {first_name}.",
        profile=wm_kernel.Profile(first_name="Ada", timezone="Europe/London"),
        clock=wm_kernel.ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[PeanutGalleryTrinket],
    )
    gallery = session.trinket("PeanutGalleryTrinket")
    gallery.add_guidance("concern", "Confirm the budget before booking.", ttl=2)
    gallery.add_guidance("coaching", "Ask one question at a time.", ttl=5)
    session.compose()
    session.advance_turn(6)
    return (session,)


@app.cell
def _(mo, session, wm_kernel):
    dashboard = mo.ui.anywidget(wm_kernel.dashboard(session))
    dashboard
    return (dashboard,)


@app.cell
def _(dashboard, mo, session):
    # reactivity through the widget's value: this cell runs again when the turn on view changes
    turn = dashboard.value["turn"]
    shown = session.prompt_at(turn)
    guidance = shown.section("peanutgallery_guidance") if "peanutgallery_guidance" in shown.section_names() else None
    mo.md(
        f"The dashboard shows turn **{turn}** of {session.turn}: "
        + (
            f"the peanut gallery's guidance is {len(guidance.content):,} characters."
            if guidance is not None
            else "no guidance is left in the prompt at that turn."
        )
    )
    return


@app.cell
def _(mo, session, wm_kernel):
    # the views of %compose and %cache, as plain functions (no magics here)
    mo.vstack([wm_kernel.compose_view(session, view="raw", last=True), wm_kernel.cache_view(session)])
    return


if __name__ == "__main__":
    app.run()
