"""Running the app as several replicas behind nginx with a shared class store (launch.py)."""
