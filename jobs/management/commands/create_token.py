from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from jobs.tokens import token_for


class Command(BaseCommand):
    help = "Print USER's API token (made if missing): send it as `Authorization: Token <key>`."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--renew", action="store_true", help="replace the token; the old key stops working")

    def handle(self, username, renew=False, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}; make one with: python manage.py createsuperuser") from None
        self.stdout.write(token_for(user, renew=renew).key)
