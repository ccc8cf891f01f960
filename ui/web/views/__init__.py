"""The pages of the web UI (run by ``ui/web/app.py`` through ``st.navigation``)."""
