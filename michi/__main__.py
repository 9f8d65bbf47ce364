from michi.cli.main import main

raise SystemExit(main())
