from dpcore.cli import main

raise SystemExit(main())
